package exportcount_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/conduitmcp/conduit/internal/exportcount"
)

// TestDirCountsTopLevelExportsOfNonTestFiles: methods, unexported names
// and test files do not count; each name in a var or const group does.
func TestDirCountsTopLevelExportsOfNonTestFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", `package p

type Thing struct{}

func (Thing) Method() {}

func New() Thing { return Thing{} }

func helper() {}

var (
	Shared, hidden = 1, 2
)
`)
	write("b.go", `package p

const Limit = 3

type inner int
`)
	write("a_test.go", `package p

func TestOnly() {}

var Exported = 1
`)
	got, err := exportcount.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Limit", "New", "Shared", "Thing"}; !slices.Equal(got.Names, want) {
		t.Errorf("Names = %v, want %v", got.Names, want)
	}
	if want := 13 + 5; got.Lines != want {
		t.Errorf("Lines = %d, want %d", got.Lines, want)
	}
}

// TestDirReportsAParseError: a file that does not parse is an error, not a
// silent count of zero.
func TestDirReportsAParseError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte("package p\nfunc {"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := exportcount.Dir(dir); err == nil {
		t.Fatal("Dir succeeded on a file that does not parse")
	}
}
