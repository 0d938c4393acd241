package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/demo"
)

// The demo describes each turn's listing and answers as the provider table
// does: every provider's turn shows that provider's shapes, and no turn
// shows an unknown one.
func TestDemoShapesComeFromTheTable(t *testing.T) {
	rep, err := demo.Play(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	renderDemo(&out, rep)
	text := out.String()
	seen := map[adapters.Provider]bool{}
	for _, turn := range rep.Turns {
		p, err := adapters.ParseProvider(turn.Provider)
		if err != nil {
			t.Fatalf("turn of %q: %v", turn.Provider, err)
		}
		seen[p] = true
		s := p.Shapes()
		if s.Tools == "" || s.Answers == "" {
			t.Errorf("%s: no shapes in the table", p)
		}
		if !strings.Contains(text, "as "+s.Tools+"\n") || !strings.Contains(text, "answers  "+s.Answers+"\n") {
			t.Errorf("%s: the demo does not show its shapes", p)
		}
	}
	if len(seen) != len(adapters.Providers()) {
		t.Errorf("the demo plays %d of %d providers", len(seen), len(adapters.Providers()))
	}
	if strings.Contains(text, " ?\n") {
		t.Error("a turn of an unknown provider")
	}
}
