package adapters_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
)

// mutate changes every map and slice reachable from v in place: a key is
// added to each map and each slice's elements are replaced, after their
// own contents were changed.
func mutate(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			mutate(v.Elem())
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			// Map values are not addressable: change a copy's insides,
			// which a shared map or slice shows.
			mutate(e)
		}
		if v.Type().Key().Kind() == reflect.String {
			k := reflect.ValueOf("mutated").Convert(v.Type().Key())
			if val := replacement(v.Type().Elem()); val.IsValid() {
				v.SetMapIndex(k, val)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			mutate(v.Index(i))
			if val := replacement(v.Type().Elem()); val.IsValid() {
				v.Index(i).Set(val)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				mutate(v.Field(i))
			}
		}
	}
}

// replacement is a value of type t unlike any a response or an answer
// holds, or the invalid Value when there is none.
func replacement(t reflect.Type) reflect.Value {
	switch t.Kind() {
	case reflect.Interface:
		return reflect.ValueOf("mutated")
	case reflect.String:
		return reflect.ValueOf("mutated").Convert(t)
	case reflect.Map:
		return reflect.MakeMap(t)
	case reflect.Slice:
		return reflect.MakeSlice(t, 1, 1)
	}
	return reflect.Value{}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// shareScript has answers of every kind: results with text, structured
// content and media, an isError result, an unknown tool, arguments that
// are not an object, and a call whose arguments nest.
func shareScript() []scripted {
	return []scripted{
		{id: "call_echo", name: "lab__echo", args: map[string]any{"message": "hi", "extra": map[string]any{"list": []any{1, map[string]any{"k": "v"}}}}},
		{id: "call_structured", name: "lab__structured", args: map[string]any{}},
		{id: "call_mixed", name: "lab__mixed", args: map[string]any{}},
		{id: "call_fail", name: "lab__fail", args: map[string]any{}},
		{id: "call_unknown", name: "lab__nope", args: map[string]any{"a": []any{"b"}}},
		{id: "call_notobject", name: "lab__echo", args: []any{"not", map[string]any{"an": "object"}}},
	}
}

// TestAnswersShareNothing: for every provider, the Execution (its answers
// and its calls' arguments) shares no map or slice with the decoded
// response: changing all of one leaves the other as it was.
func TestAnswersShareNothing(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			listing := listFor(t, hub, p)
			opts := &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths}
			// A response as a model's API gives it: decoded JSON.
			decoded := func() map[string]any {
				var m map[string]any
				if err := json.Unmarshal([]byte(jsonOf(t, script(p, shareScript()...))), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
			execution := func(response map[string]any) (*adapters.Execution, []any) {
				exec := run(t, hub, p, response, opts)
				if len(exec.Results) != len(shareScript()) {
					t.Fatalf("%d answers", len(exec.Results))
				}
				return exec, p.Wire().Answers(exec.Results)
			}

			t.Run("changing the answers", func(t *testing.T) {
				response := decoded()
				before := jsonOf(t, response)
				exec, items := execution(response)
				was := jsonOf(t, []any{exec.Results, items, exec.Calls})
				mutate(reflect.ValueOf(exec.Results))
				mutate(reflect.ValueOf(items))
				for i := range exec.Calls {
					mutate(reflect.ValueOf(exec.Calls[i].Args))
				}
				if jsonOf(t, []any{exec.Results, items, exec.Calls}) == was {
					t.Fatal("mutate changed nothing")
				}
				if after := jsonOf(t, response); after != before {
					t.Errorf("changing the answers changed the response:\n%s\nwas\n%s", after, before)
				}
			})
			t.Run("changing the response", func(t *testing.T) {
				response := decoded()
				exec, items := execution(response)
				before := jsonOf(t, []any{exec.Results, items, exec.Calls})
				was := jsonOf(t, response)
				mutate(reflect.ValueOf(response))
				if jsonOf(t, response) == was {
					t.Fatal("mutate changed nothing")
				}
				if after := jsonOf(t, []any{exec.Results, items, exec.Calls}); after != before {
					t.Errorf("changing the response changed the answers:\n%s\nwas\n%s", after, before)
				}
			})
		})
	}
}
