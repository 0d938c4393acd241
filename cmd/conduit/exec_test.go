package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type execOut struct {
	Results []map[string]any `json:"results"`
	Halted  bool             `json:"halted"`
	Taint   []string         `json:"taint"`
}

func TestExecEveryProvider(t *testing.T) {
	dir := demoDir(t)
	for _, tc := range []struct {
		provider, file string
		args           []string
		check          func(t *testing.T, out execOut)
	}{
		{"anthropic", "1-anthropic.json", nil, func(t *testing.T, out execOut) {
			if len(out.Results) != 2 || out.Results[0]["tool_use_id"] != "toolu_01A09q90qw90lq917835lq9" || out.Results[1]["is_error"] == true {
				t.Errorf("results %v", out.Results)
			}
			if text := out.Results[1]["content"].([]any)[0].(map[string]any)["text"].(string); !strings.Contains(text, "Creamy tomato pasta") {
				t.Errorf("fetch answer %q", text)
			}
			if strings.Join(out.Taint, ",") != "notes,web" {
				t.Errorf("taint %v", out.Taint)
			}
		}},
		{"openai-chat", "2-openai-chat.json", []string{"--taint", "web", "--approve", "allow"}, func(t *testing.T, out execOut) {
			// delete is refused by the taint rule, add is approved.
			if len(out.Results) != 2 || !strings.HasPrefix(out.Results[0]["content"].(string), "Error: ") ||
				out.Results[1]["content"] != "Added note n4 (Pasta shopping)." {
				t.Errorf("results %v", out.Results)
			}
		}},
		{"openai-responses", "3-openai-responses.json", nil, func(t *testing.T, out execOut) {
			if len(out.Results) != 2 || out.Results[0]["call_id"] != "call_unLAR8MvFNptuiZK6K6HCy5k" {
				t.Fatalf("results %v", out.Results)
			}
			items := out.Results[0]["output"].([]any)
			if items[1].(map[string]any)["type"] != "input_image" {
				t.Errorf("screenshot answer %v", items)
			}
			if !strings.Contains(out.Results[1]["output"].(string), "Unknown tool") {
				t.Errorf("unknown tool answer %v", out.Results[1])
			}
		}},
		{"gemini", "4-gemini.json", []string{"--approve", "deny"}, func(t *testing.T, out execOut) {
			fr := out.Results[0]["functionResponse"].(map[string]any)
			if fr["name"] != "notes__add_note" || fr["response"].(map[string]any)["error"] == nil || out.Halted {
				t.Errorf("results %v", out.Results)
			}
		}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), tc.file)
			os.WriteFile(file, turn(t, tc.file), 0o644)
			args := append([]string{"exec", "--provider", tc.provider, "--response", file}, tc.args...)
			r := conduit(t, runOpts{dir: dir}, args...)
			expect(t, r, 0, "conduit: call 1 ")
			var out execOut
			decode(t, r, &out)
			tc.check(t, out)
		})
	}
}

func TestExecStdinAndApproval(t *testing.T) {
	dir := demoDir(t)
	resp := turn(t, "2-openai-chat.json")
	// Without a terminal, ask rules are denied, saying why.
	r := conduit(t, runOpts{dir: dir, stdin: bytes.NewReader(resp)}, "exec", "--provider", "openai-chat")
	expect(t, r, 0, "notes__add_note needs approval", "no terminal to ask on")
	var out execOut
	decode(t, r, &out)
	if !strings.Contains(out.Results[1]["content"].(string), "approval") {
		t.Errorf("add answer %v", out.Results[1])
	}
	// Without taint, delete is an ask too; --approve allow lets both run.
	r = conduit(t, runOpts{dir: dir, stdin: bytes.NewReader(resp)}, "exec", "--provider", "openai-chat", "--approve", "allow", "--response", "-")
	expect(t, r, 0, "approved by --approve allow")
	out = execOut{}
	decode(t, r, &out)
	if out.Results[0]["content"] != "Deleted note n1 (Shopping list)." {
		t.Errorf("delete answer %v", out.Results[0])
	}
}

func TestExecNoCalls(t *testing.T) {
	r := conduit(t, runOpts{dir: demoDir(t), stdin: strings.NewReader(`{"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}`)},
		"exec", "--provider", "anthropic")
	expect(t, r, 0)
	var out execOut
	decode(t, r, &out)
	if out.Results == nil || len(out.Results) != 0 {
		t.Errorf("results %v", r.stdout)
	}
}

func TestExecBadResponses(t *testing.T) {
	dir := demoDir(t)
	for _, tc := range []struct {
		provider, body, want string
	}{
		{"anthropic", "not json", "not a JSON object"},
		{"anthropic", "", "not a JSON object"},
		{"anthropic", `[1,2]`, "not a JSON object"},
		{"anthropic", `{"choices": []}`, `no "content"; this looks like an OpenAI Chat Completions response (choices[].message.tool_calls), but the provider is anthropic: give provider openai-chat`},
		{"openai-chat", `{"type": "message", "role": "assistant", "content": [], "stop_reason": "end_turn"}`, `this looks like an Anthropic Messages response`},
		{"gemini", `{"output": []}`, `give provider openai-responses`},
		{"anthropic", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`, "Overloaded"},
		{"openai-chat", `{"content": []}`, `no "choices"`},
		{"openai-responses", `{"choices": []}`, `no "output"`},
		{"gemini", `{"content": []}`, `no "candidates"`},
	} {
		r := conduit(t, runOpts{dir: dir, stdin: strings.NewReader(tc.body)}, "exec", "--provider", tc.provider)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%s %q: want exit 2 with %q, got %s", tc.provider, tc.body, tc.want, r)
		}
	}
	r := conduit(t, runOpts{dir: dir}, "exec", "--provider", "gemini", "--response", "/nonexistent/r.json")
	expect(t, r, 2, "reading the response")
}
