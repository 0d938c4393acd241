package turn

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// TestKindsComplete: every sentinel conduit declares has its kind here,
// so saved state and records that name it are read back. A sentinel
// added to conduit and not here fails.
func TestKindsComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		call, ok := node.(*ast.CallExpr)
		if !ok {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "sentinel" || len(call.Args) != 1 {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok {
			return true
		}
		name, _ := strconv.Unquote(lit.Value)
		n++
		if k, ok := Kind(name); !ok || k.String() != name {
			t.Errorf("conduit's kind %q is not among the turn's kinds", name)
		}
		return true
	})
	if n != len(kinds) || n == 0 {
		t.Errorf("conduit declares %d sentinels, the turn knows %d", n, len(kinds))
	}
}
