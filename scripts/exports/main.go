// Command exports counts a package's non-test lines and top-level exported names.
//
// Usage: go run ./scripts/exports [dir] [-v]
//
// It counts each exported type, function and top-level var or const name;
// methods are not counted, since they belong to their type.
package main

import (
	"fmt"
	"os"

	"github.com/conduitmcp/conduit/internal/exportcount"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	c, err := exportcount.Dir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(os.Args) > 2 && os.Args[2] == "-v" {
		for _, n := range c.Names {
			fmt.Println(n)
		}
	}
	fmt.Printf("lines %d exported %d\n", c.Lines, len(c.Names))
}
