package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

type streamOut struct {
	turnOut
	Response   map[string]any `json:"response"`
	Ended      bool           `json:"ended"`
	Unfinished []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"unfinished"`
}

// streamFile writes a provider's stream of calls to a file.
func streamFile(t *testing.T, p adapters.Provider, calls ...toolcall.Raw) (string, [][]byte) {
	t.Helper()
	parts, err := adaptertest.StreamOf(p.String(), "Let me look. ", calls...)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "stream.sse")
	if err := os.WriteFile(file, bytes.Join(parts, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, parts
}

var pastaCalls = []toolcall.Raw{
	{ID: "call_s", Name: "notes__search_notes", Args: map[string]any{"query": "pasta"}},
	{ID: "call_f", Name: "web__fetch", Args: map[string]any{"url": "https://example.com/recipes/pasta"}},
}

// exec --stream, for every provider: the calls start while the response
// streams, the answers come in the model's order with the whole response
// the stream made; a stream cut inside its second call, on stdin, answers
// the first, names the second unfinished, and exits 2.
func TestExecStreamEveryProvider(t *testing.T) {
	dir := demoDir(t)
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			file, parts := streamFile(t, p, pastaCalls...)
			r := conduit(t, runOpts{dir: dir}, "exec", "--provider", p.String(), "--stream", "--response", file)
			expect(t, r, 0, "call 1 notes__search_notes: started while the response streams", "call 2 web__fetch: ok")
			var out streamOut
			decode(t, r, &out)
			if len(out.Results) != 2 || !out.Ended || len(out.Unfinished) != 0 || strings.Join(out.Taint, ",") != "notes,web" {
				t.Fatalf("exec --stream: %s", r)
			}
			raws, err := p.Parse(out.Response)
			if err != nil || len(raws) != 2 {
				t.Errorf("the response: %v %v", raws, err)
			}
			answers := adaptertest.FakeOf(p).Answered(p.Wire().Answers(out.Results))
			if len(answers) != 2 || answers[0].Error || answers[1].Error {
				t.Errorf("answers %+v", answers)
			}

			cut := bytes.Join(parts[:2], nil)
			if p != adapters.Gemini {
				cut = append(cut, parts[2][:bytes.Index(parts[2], []byte("\n\n"))+2]...)
			}
			r = conduit(t, runOpts{dir: dir, stdin: bytes.NewReader(cut)}, "exec", "--provider", p.String(), "--stream")
			expect(t, r, 2, "the stream ended before the response was whole")
			out = streamOut{}
			decode(t, r, &out)
			if len(out.Results) != 1 || out.Ended {
				t.Fatalf("interrupted: %s", r)
			}
			if p != adapters.Gemini && (len(out.Unfinished) != 1 || out.Unfinished[0].Name != "web__fetch") {
				t.Errorf("unfinished %+v", out.Unfinished)
			}
		})
	}
}

// The Bedrock round trip through every CLI command: tools lists toolSpec
// definitions, exec answers a whole Converse response, exec --stream
// reads ConverseStream's events as JSON lines and defers the asks into
// the state file, and resume completes the turn.
func TestBedrockStreamRoundTrip(t *testing.T) {
	dir := demoDir(t)
	p := adapters.Bedrock
	r := conduit(t, runOpts{dir: dir}, "tools", "--provider", "bedrock")
	expect(t, r, 0)
	var tools toolsOut
	decode(t, r, &tools)
	if len(tools.Tools) == 0 || tools.Tools[0]["toolSpec"] == nil {
		t.Fatalf("tools: %s", r)
	}

	whole, _ := json.Marshal(adaptertest.FakeOf(p).Response("Looking.", pastaCalls...))
	r = conduit(t, runOpts{dir: dir, stdin: bytes.NewReader(whole)}, "exec", "--provider", "bedrock")
	expect(t, r, 0)
	var out execOut
	decode(t, r, &out)
	if len(out.Results) != 2 {
		t.Fatalf("exec: %s", r)
	}

	// JSON lines, as the AWS SDKs marshal the events.
	parts, err := adaptertest.StreamOf("bedrock", "Saving it. ",
		toolcall.Raw{ID: "tooluse_s", Name: "notes__search_notes", Args: map[string]any{"query": "pasta"}},
		toolcall.Raw{ID: "tooluse_a", Name: "notes__add_note", Args: map[string]any{"title": "Pasta", "body": "tomatoes"}})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(bytes.Join(parts, nil)), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			lines = append(lines, data)
		}
	}
	file := filepath.Join(t.TempDir(), "converse-stream.jsonl")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	state := filepath.Join(t.TempDir(), "conv.state")
	env := []string{stateKey}
	r = conduit(t, runOpts{dir: dir, env: env}, "exec", "--provider", "bedrock", "--stream", "--response", file, "--state", state, "--approve", "defer")
	expect(t, r, 0, "1 call(s) wait for a decision")
	var st streamOut
	decode(t, r, &st)
	if len(st.Results) != 0 || len(st.Pending) != 1 || st.Pending[0].ID != "tooluse_a" || !st.Ended {
		t.Fatalf("exec --stream: %s", r)
	}
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--allow", "tooluse_a")
	expect(t, r, 0)
	var res turnOut
	decode(t, r, &res)
	if len(res.Results) != 2 || len(res.Pending) != 0 {
		t.Fatalf("resume: %s", r)
	}
	for i, id := range []string{"tooluse_s", "tooluse_a"} {
		tr, _ := res.Results[i]["toolResult"].(map[string]any)
		if tr["toolUseId"] != id || tr["status"] != nil {
			t.Errorf("answer %d: %v", i, res.Results[i])
		}
	}
}
