package main

import (
	"strings"
	"testing"
)

type callOut struct {
	Content []struct {
		Type, Text, MimeType, Data string
	} `json:"content"`
	IsError bool `json:"isError"`
}

func TestCall(t *testing.T) {
	dir := demoDir(t)
	r := conduit(t, runOpts{dir: dir}, "call", "notes__search_notes", `{"query": "pasta"}`)
	expect(t, r, 0)
	var out callOut
	decode(t, r, &out)
	if len(out.Content) != 1 || !strings.Contains(out.Content[0].Text, "Pasta night") {
		t.Errorf("result %s", r.stdout)
	}

	// Flags may follow the arguments; arguments may come on stdin.
	r = conduit(t, runOpts{dir: dir, stdin: strings.NewReader(`{"title": "t", "body": "b"}`)}, "call", "notes__add_note", "-", "--approve", "allow")
	expect(t, r, 0, "approved by --approve allow")

	// An image result keeps its bytes, shaped for a model.
	r = conduit(t, runOpts{dir: dir}, "call", "web__screenshot", `{"url": "https://example.com/"}`)
	expect(t, r, 0)
	out = callOut{}
	decode(t, r, &out)
	if len(out.Content) != 2 || out.Content[1].Type != "image" || out.Content[1].MimeType != "image/png" || out.Content[1].Data == "" {
		t.Errorf("screenshot %s", r.stdout)
	}
}

func TestCallFailures(t *testing.T) {
	dir := demoDir(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		// The policy's answers are failures of the work.
		{[]string{"notes__delete_note", `{"id": "n1"}`, "--taint", "web"}, 1, "denied: The policy does not allow calling notes__delete_note"},
		{[]string{"notes__delete_note", `{"id": "n1"}`}, 1, "no terminal to ask on"},
		{[]string{"notes__delete_note", `{"id": "n1"}`, "--approve", "deny"}, 1, "--approve deny"},
		// A result with isError is printed, and fails.
		{[]string{"web__fetch", `{"url": "https://elsewhere.example/"}`}, 1, "answered with an error result"},
		// Bad input.
		{[]string{"web__fetc", `{}`}, 2, `no tool "web__fetc" is offered; did you mean one of: web__fetch, web__screenshot`},
		{[]string{"web__fetch", `[1]`}, 2, "the arguments must be a JSON object"},
		{[]string{"web__fetch", `{"url": `}, 2, "the arguments must be a JSON object"},
	} {
		r := conduit(t, runOpts{dir: dir}, append([]string{"call"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("call %v: want exit %d with %q, got %s", tc.args, tc.code, tc.want, r)
		}
	}
	r := conduit(t, runOpts{dir: dir}, "call", "web__fetch", `{"url": "https://elsewhere.example/"}`)
	var out callOut
	decode(t, r, &out)
	if !out.IsError || !strings.Contains(out.Content[0].Text, "canned pages") {
		t.Errorf("isError result %s", r.stdout)
	}
}

func TestCallProgress(t *testing.T) {
	// The demo's fetch reports three steps, 15ms apart, when asked to.
	r := conduit(t, runOpts{dir: demoDir(t)}, "call", "web__fetch", `{"url": "https://example.com/"}`)
	expect(t, r, 0, "conduit: progress 1/3: resolving", "conduit: progress 2/3: downloading")
}
