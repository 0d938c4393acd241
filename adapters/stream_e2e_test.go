package adapters_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// gated is a stream that stops after its first parts until the server has
// done what the first call asks: it proves the call reached the server
// while the model was still streaming.
type gated struct {
	parts [][]byte
	open  int // parts readable before the gate
	gate  func() bool
	err   error
}

func (g *gated) Read(b []byte) (int, error) {
	for len(g.parts) > 0 && len(g.parts[0]) == 0 {
		g.parts = g.parts[1:]
		g.open--
	}
	if len(g.parts) == 0 {
		return 0, errEOF
	}
	if g.open <= 0 && g.gate != nil {
		deadline := time.Now().Add(30 * time.Second)
		for !g.gate() {
			if time.Now().After(deadline) {
				g.err = errors.New("the first call never reached the server while the stream waited")
				return 0, g.err
			}
			time.Sleep(5 * time.Millisecond)
		}
		g.gate = nil
	}
	n := copy(b, g.parts[0])
	g.parts[0] = g.parts[0][n:]
	return n, nil
}

var errEOF = io.EOF

// TestStreamFirstCallBeforeEnd: for every provider, the first call of a
// streamed response reaches the real server-filesystem (stdio) and does
// its work before the stream goes on; the second call, which reads what
// the first wrote, runs after it.
func TestStreamFirstCallBeforeEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd, args := testenv.Filesystem(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "fs", Command: cmd, Args: args}},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("fs/*"))})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			path := filepath.Join(dir, p.String()+".txt")
			calls := []toolcall.Raw{
				{ID: "call_1", Name: "fs__write_file", Args: map[string]any{"path": path, "content": "written while streaming"}},
				{ID: "call_2", Name: "fs__read_text_file", Args: map[string]any{"path": path}},
			}
			parts := streamOf(t, p, "Writing the note. ", calls...)
			g := &gated{parts: parts, open: 2, gate: func() bool {
				b, err := os.ReadFile(path)
				return err == nil && string(b) == "written while streaming"
			}}
			st, err := adapters.ExecuteStream(ctx, hub, p, g, nil, nil)
			if g.err != nil {
				t.Fatal(g.err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Results) != 2 || st.Errors[0] != nil || st.Errors[1] != nil {
				t.Fatalf("results %v errors %v", st.Results, st.Errors)
			}
			if got := resultText(p, st.Results[1]); !strings.Contains(got, "written while streaming") {
				t.Errorf("the second call read %q", got)
			}
		})
	}
}
