package conduit

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/names"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func tools(names ...string) []*mcp.Tool {
	var out []*mcp.Tool
	for _, n := range names {
		out = append(out, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
	}
	return out
}

func exposed(ts *ToolSet) []string {
	var out []string
	for t := range ts.All() {
		out = append(out, t.Exposed)
	}
	return out
}

func skipped(ts *ToolSet) []string {
	var out []string
	for _, s := range ts.Skipped() {
		out = append(out, s.Server+"/"+s.Tool+":"+s.Reason.String())
	}
	return out
}

func TestToolSetOrderAndResolution(t *testing.T) {
	ts := NewToolSet(&ToolSetOptions{Namespace: true},
		ServerTools{Server: "zeta", Tools: tools("b", "a", "c")},
		ServerTools{Server: "alpha", Tools: tools("y", "x")},
	)
	// Servers in the order given, tools by name within each.
	want := []string{"zeta__a", "zeta__b", "zeta__c", "alpha__x", "alpha__y"}
	if got := exposed(ts); !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	if ts.Len() != 5 {
		t.Fatalf("Len: %d", ts.Len())
	}
	tool, ok := ts.Lookup("alpha__y")
	if !ok || tool.Server != "alpha" || tool.Name != "y" {
		t.Fatalf("Lookup = %+v, %v", tool, ok)
	}
	if name, ok := ts.ExposedName("zeta", "c"); !ok || name != "zeta__c" {
		t.Fatalf("ExposedName = %q, %v", name, ok)
	}
	if _, ok := ts.Lookup("zeta__nope"); ok {
		t.Fatal("Lookup found an unknown name")
	}
	if _, ok := ts.ExposedName("alpha", "a"); ok {
		t.Fatal("ExposedName found a tool of another server")
	}
	// Built again from the same input, it is the same list.
	again := NewToolSet(&ToolSetOptions{Namespace: true},
		ServerTools{Server: "zeta", Tools: tools("c", "a", "b")},
		ServerTools{Server: "alpha", Tools: tools("x", "y")},
	)
	if !slices.Equal(exposed(again), want) {
		t.Fatalf("not stable: %v", exposed(again))
	}
}

func TestToolSetKeepsDefinitions(t *testing.T) {
	ro := true
	def := &mcp.Tool{
		Name:         "read.file",
		Title:        "Read a file",
		Description:  "Reads a file.",
		InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		OutputSchema: map[string]any{"type": "object"},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: ro, Title: "Reader"},
	}
	ts := NewToolSet(nil, ServerTools{Server: "fs", Tools: []*mcp.Tool{def}})
	tool, ok := ts.Lookup("read_file")
	if !ok {
		t.Fatalf("tools: %v", exposed(ts))
	}
	if tool.Tool != def || tool.Description != "Reads a file." || tool.Annotations.Title != "Reader" || tool.OutputSchema == nil {
		t.Fatalf("definition not kept: %+v", tool)
	}
}

func TestToolSetPrefix(t *testing.T) {
	ts := NewToolSet(&ToolSetOptions{Options: &Options{Prefix: "gh_"}}, ServerTools{Server: "github", Tools: tools("get_issue", "list.prs")})
	if got := exposed(ts); !slices.Equal(got, []string{"gh_get_issue", "gh_list_prs"}) {
		t.Fatalf("exposed = %v", got)
	}
	if name, _ := ts.ExposedName("github", "list.prs"); name != "gh_list_prs" {
		t.Fatalf("ExposedName = %q", name)
	}
	// The prefix means the same in a hub: in front of every exposed name.
	hub := NewToolSet(&ToolSetOptions{Namespace: true, Options: &Options{Prefix: "gh_"}}, ServerTools{Server: "github", Tools: tools("get_issue")})
	if got := exposed(hub); !slices.Equal(got, []string{"gh_github__get_issue"}) {
		t.Fatalf("hub exposed = %v", got)
	}
}

func TestToolSetCollisions(t *testing.T) {
	t.Run("sanitized names collide", func(t *testing.T) {
		ts := NewToolSet(nil, ServerTools{Server: "s", Tools: tools("read.file", "read/file", "read_dir")})
		if got := exposed(ts); !slices.Equal(got, []string{"read_dir"}) {
			t.Fatalf("exposed = %v", got)
		}
		sk := ts.Skipped()
		if len(sk) != 2 {
			t.Fatalf("skipped = %v", skipped(ts))
		}
		for _, s := range sk {
			if s.Reason != SkipCollision || s.Exposed != "read_file" || !strings.Contains(s.Detail, "2 tools") {
				t.Errorf("skip = %+v", s)
			}
		}
		if _, ok := ts.Lookup("read_file"); ok {
			t.Error("a colliding name resolves")
		}
	})
	t.Run("across servers in a client-style set", func(t *testing.T) {
		ts := NewToolSet(nil, ServerTools{Server: "a", Tools: tools("x", "y")}, ServerTools{Server: "b", Tools: tools("x")})
		if got := exposed(ts); !slices.Equal(got, []string{"y"}) {
			t.Fatalf("exposed = %v", got)
		}
		if got := skipped(ts); !slices.Equal(got, []string{"a/x:collision", "b/x:collision"}) {
			t.Fatalf("skipped = %v", got)
		}
	})
	t.Run("namespaced names do not collide across servers", func(t *testing.T) {
		ts := NewToolSet(&ToolSetOptions{Namespace: true}, ServerTools{Server: "a", Tools: tools("x")}, ServerTools{Server: "b", Tools: tools("x")})
		if got := exposed(ts); !slices.Equal(got, []string{"a__x", "b__x"}) {
			t.Fatalf("exposed = %v", got)
		}
	})
	t.Run("duplicates from one server", func(t *testing.T) {
		ts := NewToolSet(&ToolSetOptions{Namespace: true}, ServerTools{Server: "s", Tools: tools("dup", "ok", "dup")})
		if got := exposed(ts); !slices.Equal(got, []string{"s__ok"}) {
			t.Fatalf("exposed = %v", got)
		}
		if got := skipped(ts); !slices.Equal(got, []string{"s/dup:collision", "s/dup:collision"}) {
			t.Fatalf("skipped = %v", got)
		}
		if d := ts.Skipped()[0].Detail; !strings.Contains(d, "2 times") {
			t.Fatalf("detail = %q", d)
		}
	})
	t.Run("long names sharing a prefix stay apart", func(t *testing.T) {
		long := strings.Repeat("x", 70)
		ts := NewToolSet(&ToolSetOptions{Namespace: true}, ServerTools{Server: "s", Tools: tools(long+"1", long+"2")})
		if ts.Len() != 2 || len(ts.Skipped()) != 0 {
			t.Fatalf("exposed = %v skipped = %v", exposed(ts), skipped(ts))
		}
		for tool := range ts.All() {
			if len(tool.Exposed) != names.MaxLen {
				t.Errorf("%q is %d long", tool.Exposed, len(tool.Exposed))
			}
			if name, _ := ts.ExposedName("s", tool.Name); name != tool.Exposed {
				t.Errorf("ExposedName(%q) = %q", tool.Name, name)
			}
		}
	})
}

func TestToolSetInvalidAndNil(t *testing.T) {
	ts := NewToolSet(nil, ServerTools{Server: "s", Tools: []*mcp.Tool{nil, {Name: ""}, {Name: "bad\xff"}, {Name: "good"}}})
	if got := exposed(ts); !slices.Equal(got, []string{"good"}) {
		t.Fatalf("exposed = %v", got)
	}
	if got := skipped(ts); !slices.Equal(got, []string{"s/:invalid_name", "s/bad\xff:invalid_name"}) {
		t.Fatalf("skipped = %q", got)
	}
	var nilSet *ToolSet
	if nilSet.Len() != 0 || nilSet.Skipped() != nil {
		t.Fatal("nil tool set is not empty")
	}
	if _, ok := nilSet.Lookup("x"); ok {
		t.Fatal("nil tool set resolves")
	}
	if _, ok := nilSet.ExposedName("s", "x"); ok {
		t.Fatal("nil tool set resolves")
	}
	for range nilSet.All() {
		t.Fatal("nil tool set yields")
	}
	if nilSet.Filter(SkipFiltered, func(*Tool) bool { return true }).Len() != 0 {
		t.Fatal("Filter on nil")
	}
}

func TestToolSetFilterAndDown(t *testing.T) {
	ts := NewToolSet(&ToolSetOptions{
		Namespace: true,
		Options:   &Options{Filter: func(server string, tool *mcp.Tool) bool { return !strings.HasPrefix(tool.Name, "write") }},
	},
		ServerTools{Server: "fs", Tools: tools("read", "write", "write_all")},
		ServerTools{Server: "web", Down: errors.New("connection refused")},
		ServerTools{Server: "gh", Tools: tools("get")},
	)
	if got := exposed(ts); !slices.Equal(got, []string{"fs__read", "gh__get"}) {
		t.Fatalf("exposed = %v", got)
	}
	want := []string{"fs/write:filtered", "fs/write_all:filtered", "web/:server_down"}
	if got := skipped(ts); !slices.Equal(got, want) {
		t.Fatalf("skipped = %v, want %v", got, want)
	}
	if d := ts.Skipped()[2].Detail; d != "connection refused" {
		t.Fatalf("down detail = %q", d)
	}

	// Filter makes a new set; the original is unchanged.
	only := ts.Filter(SkipPolicy, func(tool *Tool) bool { return tool.Server == "gh" })
	if got := exposed(only); !slices.Equal(got, []string{"gh__get"}) {
		t.Fatalf("filtered = %v", got)
	}
	if got := skipped(only); !slices.Equal(got, append(want, "fs/read:policy")) {
		t.Fatalf("filtered skipped = %v", got)
	}
	if _, ok := only.Lookup("fs__read"); ok {
		t.Fatal("filtered set resolves a removed tool")
	}
	if _, ok := only.ExposedName("fs", "read"); ok {
		t.Fatal("filtered set resolves a removed tool")
	}
	if ts.Len() != 2 || len(ts.Skipped()) != 3 {
		t.Fatal("Filter changed the original")
	}
	// The tools are shared, so compiled schemas are too.
	a, _ := ts.Lookup("gh__get")
	b, _ := only.Lookup("gh__get")
	if a != b {
		t.Fatal("Filter copied the tools")
	}
	// Skipped returns a copy.
	ts.Skipped()[0].Reason = SkipPolicy
	if ts.Skipped()[0].Reason != SkipFiltered {
		t.Fatal("Skipped exposes internal state")
	}
}

func TestSkipReasonString(t *testing.T) {
	for r, want := range map[SkipReason]string{SkipFiltered: "filtered", SkipCollision: "collision", SkipInvalidName: "invalid_name",
		SkipServerDown: "server_down", SkipPolicy: "policy", 0: "SkipReason(0)"} {
		if r.String() != want {
			t.Errorf("%d: %q", r, r.String())
		}
	}
}
