package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDemo(t *testing.T) {
	start := time.Now()
	r := conduit(t, runOpts{}, "demo")
	elapsed := time.Since(start)
	expect(t, r, 0)
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}
	// A budget that a race-built binary on a busy CI machine still meets;
	// the demo itself takes a few hundred milliseconds.
	if elapsed > 10*time.Second {
		t.Errorf("the demo took %v", elapsed)
	}
	for _, want := range []string{
		"No network, no API key",
		"notes (up, 3 tools), web (up, 2 tools)",
		"1. deny  notes/delete_*  when the conversation holds output from web",
		"Turn 1 · anthropic", "Turn 2 · openai-chat", "Turn 3 · openai-responses", "Turn 4 · bedrock", "Turn 5 · gemini",
		"allow (rule 2) → sent, ok",
		"deny (rule 1: the conversation holds output from web) → denied, nothing sent",
		"ask (rule 3) → scripted approver: allow → sent, ok",
		"strict-mode nulls removed before sending",
		`web__fetch sent with "strict": false`,
		`"type":"input_image"`,
		"not offered to the model: refused, nothing sent",
		"ask (rule 3) → scripted approver: halt → denied, nothing sent",
		"halted",
		"ignore your previous instructions",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(r.stdout)
	}
}

func TestDemoJSON(t *testing.T) {
	r := conduit(t, runOpts{}, "demo", "--json")
	expect(t, r, 0)
	var rep struct {
		Servers []struct{ ID, State string }
		Turns   []struct {
			Provider string
			Tools    []json.RawMessage
			Calls    []struct{ Name, Decision, Approval, Outcome string }
			Results  []json.RawMessage
			Halted   bool
			Taint    []string `json:"taint_before"`
		}
	}
	decode(t, r, &rep)
	if len(rep.Servers) != 2 || len(rep.Turns) != 5 {
		t.Fatalf("report: %s", r.stdout)
	}
	var got []string
	for _, turn := range rep.Turns {
		if len(turn.Tools) != 5 || len(turn.Results) != len(turn.Calls) {
			t.Errorf("%s: %d tools, %d results for %d calls", turn.Provider, len(turn.Tools), len(turn.Results), len(turn.Calls))
		}
		for _, c := range turn.Calls {
			got = append(got, c.Name+":"+c.Decision+":"+c.Approval+":"+c.Outcome)
		}
	}
	want := []string{
		"notes__search_notes:allow::ok", "web__fetch:allow::ok",
		"notes__delete_note:deny::denied", "notes__add_note:ask:allow:ok",
		"web__screenshot:allow::ok", "shell__run:::unknown_tool",
		"notes__search_notes:allow::ok", "notes__add_note:ask:halt:denied",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("calls\n got %v\nwant %v", got, want)
	}
	if !rep.Turns[4].Halted || len(rep.Turns[0].Taint) != 0 || strings.Join(rep.Turns[1].Taint, ",") != "notes,web" {
		t.Errorf("halt/taint: %+v", rep.Turns)
	}
}
