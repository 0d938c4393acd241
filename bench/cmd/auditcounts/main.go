// Command auditcounts runs conduit's audit over the real tool lists of
// testdata and prints the sections SECURITY.md publishes: the rules, and
// per set of tool lists the findings of each rule, with examples.
//
//	go run ./cmd/auditcounts            # from the bench module's root
//	go run ./cmd/auditcounts -write ../SECURITY.md
//
// With -write, each set's section of the file (between its markers) is
// replaced in place.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/conduitmcp/conduit/bench/internal/auditcorpus"
)

func main() {
	testdata := flag.String("testdata", "testdata", "the bench module's testdata `DIR`")
	write := flag.String("write", "", "replace the sections of this `FILE` instead of printing them")
	flag.Parse()
	sets, err := auditcorpus.Load(*testdata)
	if err != nil {
		log.Fatal(err)
	}
	sections := map[string]string{"rules": auditcorpus.RulesSection()}
	names := []string{"rules"}
	for _, s := range sets {
		sections[s.Name] = auditcorpus.Section(s)
		names = append(names, s.Name)
	}
	if *write == "" {
		for _, n := range names {
			fmt.Print(sections[n], "\n")
		}
		return
	}
	data, err := os.ReadFile(*write)
	if err != nil {
		log.Fatal(err)
	}
	doc := string(data)
	for _, n := range names {
		old := auditcorpus.Extract(doc, n)
		if old == "" {
			log.Fatalf("%s has no section %s ... %s", *write, auditcorpus.Begin(n), auditcorpus.End(n))
		}
		doc = strings.Replace(doc, old, sections[n], 1)
	}
	if err := os.WriteFile(*write, []byte(doc), 0o644); err != nil {
		log.Fatal(err)
	}
}
