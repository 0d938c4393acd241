package adapters_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProviderPackagesExportTheirDriverOnly: each provider package is
// reached through its driver, so programs have one way to a provider (its
// adapters.Provider value and Wire). A second public way would drift.
func TestProviderPackagesExportTheirDriverOnly(t *testing.T) {
	want := map[string][]string{
		"anthropic": {"Driver"},
		"bedrock":   {"Driver"},
		"gemini":    {"Driver"},
		"openai":    {"ChatDriver", "ResponsesDriver"},
	}
	for dir, names := range want {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				got = append(got, exported(d)...)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, names) {
			t.Errorf("package %s exports %v, want %v", dir, got, names)
		}
	}
}

// exported are the exported top-level names d declares, methods aside.
func exported(d ast.Decl) []string {
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
