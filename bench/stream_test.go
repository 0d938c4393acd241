package bench

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/bedrock"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/internal/sse"
)

// streamGap is the time between a recorded stream's blocks: a tool call of
// about 30 output tokens at 100 tokens a second.
const streamGap = 300 * time.Millisecond

// BenchmarkStream measures streamed input (issue 42). parse/P is each
// provider's stream parser alone, per event (ns/event), on a response of
// text and three calls. replay/M replays a recorded Anthropic stream of
// three calls to a 50 ms tool, its blocks streamGap apart, and reports
// ms-after-end: the time from the stream's last byte to the last answer,
// streaming (each call sent as it completes) against waiting (the whole
// response read, then ExecuteToolCalls).
func BenchmarkStream(b *testing.B) {
	drivers := map[string]driver.Provider{"anthropic": anthropic.Driver(), "openai-chat": openai.ChatDriver(),
		"openai-responses": openai.ResponsesDriver(), "gemini": gemini.Driver(), "bedrock": bedrock.Driver()}
	calls := []toolcall.Raw{
		{ID: "call_1", Name: "files__read_file", Args: map[string]any{"path": "/srv/notes/a.md"}},
		{ID: "call_2", Name: "files__read_file", Args: map[string]any{"path": "/srv/notes/b.md"}},
		{ID: "call_3", Name: "files__list_directory", Args: map[string]any{"path": "/srv/notes"}},
	}
	for _, p := range adapters.Providers() {
		b.Run("parse/"+p.String(), func(b *testing.B) {
			parts, err := adaptertest.StreamOf(p.String(), "Let me read both notes and list the folder. ", calls...)
			if err != nil {
				b.Fatal(err)
			}
			data := bytes.Join(parts, nil)
			events := 0
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				s := drivers[p.String()].(driver.Streamer).Stream()
				r := sse.NewReader(bytes.NewReader(data), -1)
				events = 0
				for {
					ev, err := r.Next()
					if err != nil {
						break
					}
					if _, err := s.Event(driver.Event{Name: ev.Name, Data: ev.Data}); err != nil {
						b.Fatal(err)
					}
					events++
				}
				s.Response()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
			b.ReportMetric(float64(events), "events")
		})
	}
	for _, mode := range []string{"streaming", "waiting"} {
		b.Run("replay/"+mode, func(b *testing.B) { benchReplay(b, mode == "streaming") })
	}
}

// gapped reads parts with gap before each after the first, and notes
// when its last byte was read.
type gapped struct {
	parts [][]byte
	gap   time.Duration
	first bool
	end   time.Time
}

func (g *gapped) Read(b []byte) (int, error) {
	if len(g.parts) == 0 {
		if g.end.IsZero() {
			g.end = time.Now()
		}
		return 0, io.EOF
	}
	if g.first {
		time.Sleep(g.gap)
	}
	g.first = true
	n := copy(b, g.parts[0])
	g.parts = g.parts[1:]
	return n, nil
}

func benchReplay(b *testing.B, streaming bool) {
	e := newEnv(b, inMemory)
	slow, ok := e.listing.ToolSet.ExposedName(fixture.ServerID, fixture.SlowTool)
	if !ok {
		b.Fatal(fixture.SlowTool, " is not listed")
	}
	var calls []toolcall.Raw
	for i := range 3 {
		calls = append(calls, toolcall.Raw{ID: fmt.Sprintf("toolu_%d", i), Name: slow, Args: map[string]any{"account": "acme", "days": 30}})
	}
	parts, err := adaptertest.StreamOf("anthropic", "I will pull the three reports. ", calls...)
	if err != nil {
		b.Fatal(err)
	}
	whole := adaptertest.FakeOf(adapters.Anthropic).Response("I will pull the three reports. ", calls...)
	opts := *e.eopts
	opts.MaxConcurrency = 8
	var after time.Duration
	for b.Loop() {
		g := &gapped{parts: append([][]byte(nil), parts...), gap: streamGap}
		var results int
		if streaming {
			st, err := adapters.ExecuteStream(e.ctx, e.hub, adapters.Anthropic, g, &opts, nil)
			if err != nil {
				b.Fatal(err)
			}
			results = len(st.Results)
		} else {
			io.Copy(io.Discard, g)
			exec, err := adapters.ExecuteToolCalls(e.ctx, e.hub, adapters.Anthropic, whole, &opts)
			if err != nil {
				b.Fatal(err)
			}
			results = len(exec.Results)
		}
		after += time.Since(g.end)
		if results != 3 {
			b.Fatalf("%d results", results)
		}
	}
	b.ReportMetric(float64(after.Microseconds())/1000/float64(b.N), "ms-after-end")
}
