// Command gencorpus writes the benchmarks' tool corpus, testdata/corpus.json,
// from the real tool lists in testdata (server-everything's and
// server-filesystem's) and the synthetic servers of package corpus. Run it
// from the bench module's root: go run ./cmd/gencorpus.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/conduitmcp/conduit/bench/internal/corpus"
)

func main() {
	dir := flag.String("dir", "testdata", "directory of the sources and of corpus.json")
	flag.Parse()
	src, err := corpus.LoadSources(*dir)
	if err != nil {
		log.Fatal(err)
	}
	c, err := corpus.Generate(src)
	if err != nil {
		log.Fatal(err)
	}
	data, err := c.Marshal()
	if err != nil {
		log.Fatal(err)
	}
	path := *dir + "/corpus.json"
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d tools over %d servers, %d bytes\n", path, c.Len(), len(c.Servers), len(data))
}
