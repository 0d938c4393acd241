package docstest

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/conduitmcp/conduit/internal/cli"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// docs are the README and the guides, as paths from the repository root.
func docs(t *testing.T) []string {
	t.Helper()
	root := testenv.RepoRoot()
	files := []string{"README.md"}
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(guides) < 6 {
		t.Fatalf("docs/ holds %d guides; the README points at more", len(guides))
	}
	for _, g := range guides {
		rel, _ := filepath.Rel(root, g)
		files = append(files, rel)
	}
	return files
}

func read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fences matches a fenced code block: its language and its body.
var fences = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```")

// prose is text with its code blocks and inline code removed, so that a
// link shown as an example is not taken for one.
func prose(s string) string {
	s = fences.ReplaceAllString(s, "")
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(s, "")
}

var links = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ' || r == '-':
			b.WriteRune('-')
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the headings' anchors of a markdown file.
func anchors(s string) []string {
	var out []string
	for l := range strings.Lines(fences.ReplaceAllString(s, "")) {
		if h, ok := strings.CutPrefix(l, "#"); ok {
			out = append(out, slug(strings.TrimLeft(h, "#")))
		}
	}
	return out
}

// TestRelativeLinks: every relative link in the README and the guides
// names a file or directory of the repository, and a heading of it when
// it names one, so that moving text between guides cannot leave a reader
// at a dead end.
func TestRelativeLinks(t *testing.T) {
	root := testenv.RepoRoot()
	checked := 0
	for _, doc := range docs(t) {
		text := read(t, doc)
		for _, m := range links.FindAllStringSubmatch(prose(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(filepath.Join(root, path)); err != nil {
					t.Errorf("%s links to %s, which does not exist", doc, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !slices.Contains(anchors(read(t, path)), anchor) {
				t.Errorf("%s links to %s, which has no heading #%s", doc, target, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the pattern no longer matches the docs")
	}
}

// TestGoPrograms: every Go block that is a whole program (package main)
// compiles against the repository's packages, as a reader would run it.
func TestGoPrograms(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	// Inside the module, so that the programs import its packages; under
	// testdata, so that ./... never builds them.
	parent := filepath.Join(testenv.RepoRoot(), "internal", "docstest", "testdata")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, "prog")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		os.Remove(parent) // when no other run uses it
	})
	programs := 0
	for _, doc := range docs(t) {
		for i, m := range fences.FindAllStringSubmatch(read(t, doc), -1) {
			if m[1] != "go" || !regexp.MustCompile(`(?m)^package main$`).MatchString(m[2]) {
				continue
			}
			programs++
			pkg := filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(doc)+"_"+string(rune('a'+i)))
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(m[2]), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(goTool, "vet", "./"+filepath.Base(dir)+"/"+filepath.Base(pkg))
			cmd.Dir = parent
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("the Go program in %s (block %d) does not compile: %v\n%s", doc, i+1, err, out)
			}
		}
	}
	if programs == 0 {
		t.Fatal("no Go program found in the docs: the README's first program is one")
	}
}

// packages are the import names the docs' Go blocks use for conduit's own
// packages, and their directories.
var packages = map[string]string{
	"conduit":         ".",
	"adapters":        "adapters",
	"openai":          "adapters/openai",
	"anthropic":       "adapters/anthropic",
	"gemini":          "adapters/gemini",
	"bedrock":         "adapters/bedrock",
	"driver":          "adapters/driver",
	"toolcall":        "adapters/toolcall",
	"adaptertest":     "adapters/adaptertest",
	"audit":           "audit",
	"oauth":           "oauth",
	"store":           "store",
	"redisstore":      "store/redisstore",
	"gateway":         "gateway",
	"otelconduit":     "otelconduit",
	"temporalconduit": "temporalconduit",
}

// api is a package's exported top-level names, each with the fields (and
// embedded types) and methods it has, when it is a type.
type api map[string]map[string]bool

// exported is the api of the package in dir.
func exported(t *testing.T, dir string) api {
	t.Helper()
	fset := token.NewFileSet()
	names := api{}
	members := func(typ string) map[string]bool {
		if names[typ] == nil {
			names[typ] = map[string]bool{}
		}
		return names[typ]
	}
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					members(d.Name.Name)
					continue
				}
				members(typeName(d.Recv.List[0].Type))[d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						m := members(s.Name.Name)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, f := range st.Fields.List {
								if len(f.Names) == 0 {
									m[typeName(f.Type)] = true
								}
								for _, n := range f.Names {
									m[n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							members(n.Name)
						}
					}
				}
			}
		}
	}
	return names
}

// typeName is the name of a receiver's or an embedded field's type.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// literalFields are the field names of the composite literal whose
// opening brace is at body[open].
func literalFields(body string, open int) []string {
	var fields []string
	depth := 0
	for i := open; i < len(body); i++ {
		switch c := body[i]; c {
		case '{', '(', '[':
			depth++
		case '}', ')', ']':
			if depth--; depth == 0 {
				return fields
			}
		case '"', '`':
			if end := strings.IndexByte(body[i+1:], c); end >= 0 {
				i += end + 1
			}
		default:
			if depth != 1 || !unicode.IsUpper(rune(c)) || i > 0 && (isWord(body[i-1]) || body[i-1] == '.') {
				continue
			}
			end := i
			for end < len(body) && isWord(body[end]) {
				end++
			}
			if end < len(body) && body[end] == ':' {
				fields = append(fields, body[i:end])
			}
			i = end - 1
		}
	}
	return fields
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// selectors are pkg.Name in Go code; members are pkg.Type.Member.
var (
	selectors = regexp.MustCompile(`\b([a-z]+)\.([A-Z][A-Za-z0-9]*)`)
	members   = regexp.MustCompile("`" + `([a-z]+)\.([A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*)\b`)
)

// TestGoNames: every conduit name the docs use is what its package
// exports: in Go blocks each pkg.Name and each field of a pkg.Type{...}
// literal, and in the text each pkg.Type.Member (conduit.Options.Store),
// so that a renamed or moved name fails here, not in a reader's editor.
// Fragments cannot compile alone; their names can be checked.
func TestGoNames(t *testing.T) {
	cache := map[string]api{}
	pkg := func(name string) api {
		dir, ok := packages[name]
		if !ok {
			return nil
		}
		if cache[dir] == nil {
			cache[dir] = exported(t, dir)
		}
		return cache[dir]
	}
	used := 0
	for _, doc := range docs(t) {
		text := read(t, doc)
		for _, m := range fences.FindAllStringSubmatch(text, -1) {
			if m[1] != "go" {
				continue
			}
			body := m[2]
			for _, at := range selectors.FindAllStringSubmatchIndex(body, -1) {
				p, name := body[at[2]:at[3]], body[at[4]:at[5]]
				names := pkg(p)
				if names == nil {
					continue
				}
				used++
				members, ok := names[name]
				if !ok {
					t.Errorf("%s uses %s.%s, which package %s does not export", doc, p, name, packages[p])
					continue
				}
				if at[1] < len(body) && body[at[1]] == '{' {
					for _, f := range literalFields(body, at[1]) {
						if !members[f] {
							t.Errorf("%s sets %s.%s{%s: ...}, which has no such field", doc, p, name, f)
						}
					}
				}
			}
		}
		for _, m := range members.FindAllStringSubmatch(fences.ReplaceAllString(text, ""), -1) {
			names := pkg(m[1])
			if names == nil {
				continue
			}
			used++
			if !names[m[2]][m[3]] {
				t.Errorf("%s names %s.%s.%s, which package %s does not have", doc, m[1], m[2], m[3], packages[m[1]])
			}
		}
	}
	if used == 0 {
		t.Fatal("no conduit name found in the docs")
	}
}

// assignments are the VAR=value (or VAR=$(command)) before a command.
var assignments = regexp.MustCompile(`^\s*(?:[A-Z_][A-Z0-9_]*=(?:\$\([^)]*\)|\S*)\s+)*`)

// htmlComments are notes to the docs' editors, not text a reader runs.
var htmlComments = regexp.MustCompile(`(?s)<!--.*?-->`)

// inlineCommand is a conduit command line in inline code.
var inlineCommand = regexp.MustCompile("`(conduit [a-z][^`]*)`")

// TestCommandFlags: every conduit command line in the docs (shell blocks,
// and inline code that starts with conduit) names a command that exists and only flags that command takes, as its
// -h lists them, so that a reader's copy runs.
func TestCommandFlags(t *testing.T) {
	help := map[string]string{}
	usage := func(cmd string) string {
		if h, ok := help[cmd]; ok {
			return h
		}
		var out strings.Builder
		env := &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
		cli.Main(context.Background(), []string{cmd, "-h"}, env)
		help[cmd] = out.String()
		return help[cmd]
	}
	lines := 0
	for _, doc := range docs(t) {
		text := read(t, doc)
		var commands []string
		for _, m := range fences.FindAllStringSubmatch(text, -1) {
			if m[1] == "sh" {
				commands = append(commands, strings.Split(strings.ReplaceAll(m[2], "\\\n", " "), "\n")...)
			}
		}
		for _, m := range inlineCommand.FindAllStringSubmatch(htmlComments.ReplaceAllString(fences.ReplaceAllString(text, ""), ""), -1) {
			commands = append(commands, strings.ReplaceAll(m[1], "\n", " "))
		}
		for _, line := range commands {
			line, _, _ = strings.Cut(line, "#")
			words := strings.Fields(assignments.ReplaceAllString(line, ""))
			if len(words) < 2 || words[0] != "conduit" {
				continue
			}
			lines++
			cmd := words[1]
			t.Logf("%s: %s", doc, strings.Join(words, " "))
			h := usage(cmd)
			if !strings.Contains(h, "Usage: conduit "+cmd) {
				t.Errorf("%s runs conduit %s, which is not a command:\n%s", doc, cmd, h)
				continue
			}
			for _, w := range words[2:] {
				name, ok := strings.CutPrefix(w, "--")
				if !ok {
					continue
				}
				name, _, _ = strings.Cut(name, "=")
				if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `\b`).MatchString(h) {
					t.Errorf("%s runs conduit %s with --%s, which it does not take", doc, cmd, name)
				}
			}
		}
	}
	if lines == 0 {
		t.Fatal("no conduit command found in the docs")
	}
}
