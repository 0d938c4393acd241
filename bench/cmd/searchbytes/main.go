// Command searchbytes prints the table of BENCHMARKS.md ("Tool search:
// what a request carries"): for each provider, the bytes of the request's
// "tools" and the approximate tokens of tool definitions the model reads,
// with every one of the real servers' tools listed and in search mode, at
// the first turn and after three searches (see package footprint for the
// method). Run it from the bench module's root:
//
//	go run ./cmd/searchbytes
package main

import (
	"fmt"
	"log"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/bench/internal/corpus"
	"github.com/conduitmcp/conduit/bench/internal/footprint"
)

func main() {
	c, index, err := corpus.LoadServers(corpus.ServersDir)
	if err != nil {
		log.Fatal(err)
	}
	servers, err := c.ServerTools()
	if err != nil {
		log.Fatal(err)
	}
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, servers...)
	rows, err := footprint.Measure(ts, footprint.Queries)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tools of %d servers; searches: %s\n\n", ts.Len(), len(index), strings.Join(quoted(footprint.Queries), ", "))
	fmt.Println("| provider | listing | `tools` bytes, turn 1 | after 3 searches | tokens read, turn 1 | after 3 searches | % of every tool's tokens |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
	full := map[adapters.Provider]footprint.Row{}
	for _, r := range rows {
		if r.Mode == footprint.Full {
			full[r.Provider] = r
		}
		pct := 100 * float64(r.TokensAfter) / float64(full[r.Provider].Tokens)
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %.1f %% |\n", r.Provider, r.Mode,
			num(r.Bytes), num(r.BytesAfter), num(r.Tokens), num(r.TokensAfter), pct)
	}
}

func quoted(qs []string) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = fmt.Sprintf("%q", q)
	}
	return out
}

// num writes n with thousands separators.
func num(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
