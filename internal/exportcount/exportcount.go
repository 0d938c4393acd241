// Package exportcount counts a Go package's non-test lines and top-level exported names.
//
// The size checks on the root and provider packages share it, so both count alike.
package exportcount

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Count is what Dir found in one package directory.
type Count struct {
	// Lines is the number of lines in the non-test .go files.
	Lines int
	// Names are the exported top-level names, sorted.
	// Methods are left out: they belong to their type.
	Names []string
}

// Dir counts the non-test .go files directly in dir.
func Dir(dir string) (Count, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return Count{}, err
	}
	var c Count
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return Count{}, err
		}
		c.Lines += bytes.Count(src, []byte("\n"))
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return Count{}, err
		}
		for _, d := range f.Decls {
			c.Names = append(c.Names, Exported(d)...)
		}
	}
	slices.Sort(c.Names)
	return c, nil
}

// Exported returns the exported top-level names d declares, methods aside.
func Exported(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil && d.Name.IsExported() {
			names = append(names, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					names = append(names, s.Name.Name)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}
