package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Bedrock round trip through the CLI against the reference server
// from npm: tools lists toolSpec definitions, and exec answers a Converse
// response with toolResult blocks, the server's own result in the first
// and an unknown tool refused, as status error, in the second.
func TestBedrockToolsAndExec(t *testing.T) {
	dir := everythingDir(t)
	slow := []string{"--connect-timeout", "50s"}
	r := conduit(t, runOpts{dir: dir}, append([]string{"tools", "--provider", "bedrock"}, slow...)...)
	expect(t, r, 0)
	var tools toolsOut
	decode(t, r, &tools)
	var listed []string
	for _, def := range tools.Tools {
		spec, _ := def["toolSpec"].(map[string]any)
		schema, _ := spec["inputSchema"].(map[string]any)
		if spec == nil || schema["json"] == nil || len(def) != 1 {
			t.Fatalf("not a toolSpec definition: %v", def)
		}
		listed = append(listed, spec["name"].(string))
	}
	if !slices.Contains(listed, "everything__echo") {
		t.Fatalf("tools %v", listed)
	}

	resp := map[string]any{
		"output": map[string]any{"message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"text": "Echoing."},
			map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_echo", "name": "everything__echo", "input": map[string]any{"message": "hi"}}},
			map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_shell", "name": "shell__run", "input": map[string]any{"command": "ls"}}},
		}}},
		"stopReason": "tool_use",
	}
	file := filepath.Join(t.TempDir(), "converse.json")
	data, _ := json.Marshal(resp)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r = conduit(t, runOpts{dir: dir}, append([]string{"exec", "--provider", "bedrock", "--response", file}, slow...)...)
	expect(t, r, 0)
	var out execOut
	decode(t, r, &out)
	if len(out.Results) != 2 {
		t.Fatalf("results %v", out.Results)
	}
	echo, _ := out.Results[0]["toolResult"].(map[string]any)
	if echo["toolUseId"] != "tooluse_echo" || echo["status"] != nil || !strings.Contains(textOf(echo), "Echo: hi") {
		t.Errorf("echo answer %v", out.Results[0])
	}
	unknown, _ := out.Results[1]["toolResult"].(map[string]any)
	if unknown["toolUseId"] != "tooluse_shell" || unknown["status"] != "error" || !strings.Contains(textOf(unknown), "Unknown tool") {
		t.Errorf("unknown tool answer %v", out.Results[1])
	}
}

// textOf is a toolResult's text blocks, joined.
func textOf(result map[string]any) string {
	var texts []string
	for _, b := range result["content"].([]any) {
		if s, ok := b.(map[string]any)["text"].(string); ok {
			texts = append(texts, s)
		}
	}
	return strings.Join(texts, "\n")
}
