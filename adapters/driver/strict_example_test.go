package driver_test

import (
	"fmt"

	"github.com/conduitmcp/conduit/adapters/driver"
)

func ExampleStrictSchema() {
	strict, nullPaths, err := driver.StrictSchema(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"q":     map[string]any{"type": "string"},
			"limit": map[string]any{"type": "integer"},
		},
		"required": []any{"q"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strict["properties"].(map[string]any)["limit"])
	fmt.Println(nullPaths)
	// Output:
	// map[type:[integer null]]
	// [[limit]]
}

func ExampleStripNulls() {
	// What the model sent for the schema of ExampleStrictSchema: strict mode
	// made it send "limit", and it had nothing to say.
	args := map[string]any{"q": "golang", "limit": nil}
	fmt.Println(driver.StripNulls(args, []driver.NullPath{{"limit"}}))
	// Output:
	// map[q:golang]
}

func ExampleStripNulls_arrayItems() {
	paths := []driver.NullPath{{"tags", driver.AnyItem, "note"}}
	args := map[string]any{"tags": []any{
		map[string]any{"name": "a", "note": nil},
		map[string]any{"name": "b", "note": "kept"},
	}}
	fmt.Println(driver.StripNulls(args, paths))
	// Output:
	// map[tags:[map[name:a] map[name:b note:kept]]]
}
