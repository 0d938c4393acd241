// Command commentstats measures the doc comments of Go files. It reports the
// words in an average sentence, and the comments that cite a file name. It
// reads the non-test files under the directories given (default "."). With
// -tests, it reads the test files too. It skips vendor, testdata,
// node_modules and hidden directories.
//
//	go run ./internal/cmd/commentstats [-v] [-tests] [DIR ...]
//
// A doc comment is one attached to a package, declaration or field, as go
// doc shows it. Its code blocks and list markers are not prose and are
// skipped. A sentence ends at ".", "!" or "?" before a space. It also ends
// at a blank line, or where a list item starts.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// fileName is a Go file's name cited in a comment, alone or at the end of a
// path. It is letters, digits and underscores, then the Go suffix.
var fileName = regexp.MustCompile(`(^|[^A-Za-z0-9_.-])[A-Za-z0-9_./-]*[A-Za-z0-9_]\.go\b`)

// directives are comment lines that name files for the tools, not readers.
var directives = regexp.MustCompile(`^//(go:|line |\s*\+build)`)

type stats struct {
	files, docs, sentences, words int
	citations                     []string
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("commentstats: ")
	verbose := flag.Bool("v", false, "list each comment line that cites a file name")
	tests := flag.Bool("tests", false, "read test files too")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var s stats
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if path != dir && (name == "vendor" || name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") && !*tests {
				return nil
			}
			return s.file(path)
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	if *verbose {
		for _, c := range s.citations {
			fmt.Println(c)
		}
	}
	avg := 0.0
	if s.sentences > 0 {
		avg = float64(s.words) / float64(s.sentences)
	}
	fmt.Printf("files %d, doc comments %d, sentences %d, words %d\n", s.files, s.docs, s.sentences, s.words)
	fmt.Printf("words per sentence %.1f\n", avg)
	fmt.Printf("comment lines citing a file name %d\n", len(s.citations))
}

// file adds one Go file's figures.
func (s *stats) file(path string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	s.files++
	for _, g := range f.Comments {
		for _, c := range g.List {
			if directives.MatchString(c.Text) {
				continue
			}
			if fileName.MatchString(c.Text) {
				s.citations = append(s.citations, fmt.Sprintf("%s: %s", fset.Position(c.Pos()), strings.TrimSpace(c.Text)))
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var doc *ast.CommentGroup
		switch n := n.(type) {
		case *ast.File:
			doc = n.Doc
		case *ast.FuncDecl:
			doc = n.Doc
		case *ast.GenDecl:
			doc = n.Doc
		case *ast.TypeSpec:
			doc = n.Doc
		case *ast.ValueSpec:
			doc = n.Doc
		case *ast.Field:
			doc = n.Doc
		}
		if doc != nil {
			s.docs++
			s.prose(doc.Text())
		}
		return true
	})
	return nil
}

// listItem starts a list item of a doc comment.
var listItem = regexp.MustCompile(`^\s*([-*+•]|\d+[.)])\s+`)

// prose counts the sentences and words of a doc comment's text.
func (s *stats) prose(text string) {
	words := 0
	end := func() {
		if words > 0 {
			s.sentences++
			s.words += words
		}
		words = 0
	}
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "  ") && !listItem.MatchString(line) {
			continue // a code block
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "# ") {
			end()
			continue
		}
		if m := listItem.FindString(line); m != "" {
			end()
			line = line[len(m):]
		}
		for _, w := range strings.Fields(line) {
			if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
				words++
			}
			if strings.HasSuffix(w, ".") || strings.HasSuffix(w, "!") || strings.HasSuffix(w, "?") ||
				strings.HasSuffix(w, ".)") || strings.HasSuffix(w, ".\"") {
				end()
			}
		}
	}
	end()
}
