package sdkcheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"google.golang.org/genai"
)

var geminiName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$`)

// geminiComparable is a declaration as genai can hold it. conduit sends
// "description": "" for a tool without one (the spec asks for it);
// genai.FunctionDeclaration.Description is `json:",omitempty"`, so the
// SDK sends no description instead, which the API reads the same way.
// That one difference is not a mismatch.
func geminiComparable(def map[string]any) map[string]any {
	if def["description"] != "" {
		return def
	}
	cp := maps.Clone(def)
	delete(cp, "description")
	return cp
}

// TestGeminiToolDefinitions decodes every function declaration into the
// SDK's genai.FunctionDeclaration (refusing unknown fields) and the list
// into a genai.Tool.
func TestGeminiToolDefinitions(t *testing.T) {
	k := newKit(t)
	l := k.list(t, adapters.Gemini, nil)
	var comparable []any
	for i, def := range l.Tools {
		what := fmt.Sprintf("declaration %d (%v)", i, def["name"])
		if _, ok := def["description"].(string); !ok {
			t.Errorf("%s: no description string (the spec sends \"\" for none): %s", what, canon(def))
		}
		d := decodeInto[genai.FunctionDeclaration](t, what, geminiComparable(def), true)
		comparable = append(comparable, geminiComparable(def))
		if d.Name == "" || d.Name != def["name"] || !geminiName.MatchString(d.Name) {
			t.Errorf("%s: Name = %q", what, d.Name)
		}
		if d.Parameters != nil || d.ParametersJsonSchema == nil {
			t.Errorf("%s: Parameters = %v, ParametersJsonSchema = %v; want only parametersJsonSchema", what, d.Parameters, d.ParametersJsonSchema)
		}
		if typ := lookup(def, "parametersJsonSchema", "type"); typ != "object" {
			t.Errorf("%s: parametersJsonSchema.type = %v", what, typ)
		}
	}
	// The input schema is sent unchanged.
	byName := map[any]map[string]any{}
	for _, def := range l.Tools {
		byName[def["name"]] = def
	}
	for _, tool := range kitTools() {
		def := byName[exposed(tool.name)]
		if def == nil {
			t.Errorf("%s is not listed", exposed(tool.name))
			continue
		}
		if got := lookup(jsonValue(t, def), "parametersJsonSchema"); !reflect.DeepEqual(got, jsonValue(t, tool.schema)) {
			t.Errorf("%s: parametersJsonSchema = %s, the tool's inputSchema is %s", tool.name, canon(got), canon(tool.schema))
		}
	}
	tool := decodeInto[genai.Tool](t, "the tool", map[string]any{"functionDeclarations": comparable}, true)
	if len(tool.FunctionDeclarations) != len(l.Tools) {
		t.Errorf("%d SDK declarations, %d listed", len(tool.FunctionDeclarations), len(l.Tools))
	}
}

// geminiResponse is a generateContent response as the API reference
// documents it: one candidate whose content has a functionCall part per
// call, the first with a thought signature (Gemini 3), each with an id
// but the first (older models send none).
func geminiResponse(calls []modelCall) []byte {
	var parts []string
	for i, c := range calls {
		fc := fmt.Sprintf(`"name":%q,"args":%s`, c.name, c.args)
		if i > 0 {
			fc = fmt.Sprintf(`"id":"fc-%s",`, c.id) + fc
		}
		p := `{"functionCall":{` + fc + `}`
		if i == 0 {
			p += `,"thoughtSignature":"CiQB0e2Kb7Z1p5mJ3vQe6dc3Bq1f9rS0YkXcJvUgTq2nW4hLw8E="`
		}
		parts = append(parts, p+"}")
	}
	return []byte(`{
  "candidates": [
    {
      "content": {
        "parts": [` + strings.Join(parts, ",\n          ") + `],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 120,
    "candidatesTokenCount": 40,
    "totalTokenCount": 190,
    "thoughtsTokenCount": 30,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}]
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "mAitaLmkHPPlz7IPvtfUqQ4"
}`)
}

// TestGeminiToolCalls feeds a genai.GenerateContentResponse to
// ExecuteToolCalls (by value and by pointer), decodes every answer into a
// genai.Part with a FunctionResponse, and builds the next turn's contents
// and tool config.
func TestGeminiToolCalls(t *testing.T) {
	calls := geminiCalls()
	body := geminiResponse(calls)
	var resp genai.GenerateContentResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("the example response does not decode into genai.GenerateContentResponse: %v", err)
	}
	fcs := resp.FunctionCalls()
	if len(fcs) != len(calls) {
		t.Fatalf("the SDK decoded %d function calls, want %d", len(fcs), len(calls))
	}

	listing, exec := runAll(t, adapters.Gemini, nil, calls, body, resp, &resp, resp.Candidates[0].Content, *resp.Candidates[0].Content)

	var parts []*genai.Part
	for i, c := range calls {
		res := exec.Results[i]
		what := fmt.Sprintf("answer %d (%s)", i, c.name)
		p := decodeInto[genai.Part](t, what, res, true)
		parts = append(parts, &p)
		fr := p.FunctionResponse
		if fr == nil {
			t.Errorf("%s: the part has no FunctionResponse: %s", what, canon(res))
			continue
		}
		if fr.Name != fcs[i].Name || fr.ID != fcs[i].ID {
			t.Errorf("%s: Name, ID = %q, %q; want %q, %q", what, fr.Name, fr.ID, fcs[i].Name, fcs[i].ID)
		}
		checkGeminiResponse(t, what, c, fr.Response)
	}

	userTurn := map[string]any{"role": "user", "parts": exec.Results}
	user := decodeInto[genai.Content](t, "the user turn", userTurn, true)
	if user.Role != genai.RoleUser || len(user.Parts) != len(calls) {
		t.Errorf("the user turn decoded as %s", canon(user))
	}

	var decls []any
	for _, d := range listing.Tools {
		decls = append(decls, geminiComparable(d))
	}
	tool := decodeInto[genai.Tool](t, "the tool", map[string]any{"functionDeclarations": decls}, true)
	config := &genai.GenerateContentConfig{
		Tools: []*genai.Tool{&tool},
		ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
			Mode: genai.FunctionCallingConfigModeAuto}},
	}
	contents := []*genai.Content{
		genai.NewContentFromText("Run every tool.", genai.RoleUser),
		resp.Candidates[0].Content,
		&user,
	}
	// The REST body the request stands for: contents, tools, toolConfig.
	data, err := json.Marshal(map[string]any{"contents": contents, "tools": config.Tools, "toolConfig": config.ToolConfig})
	if err != nil {
		t.Fatalf("the request does not marshal: %v", err)
	}
	var sent map[string]any
	if err := json.Unmarshal(data, &sent); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "tools[0].functionDeclarations", decls, lookup(sent, "tools", 0, "functionDeclarations"))
	sameJSON(t, "contents[2]", userTurn, lookup(sent, "contents", 2))
	if got := lookup(sent, "contents", 1, "parts", 0, "thoughtSignature"); got == nil {
		t.Errorf("the model's thought signature is lost from contents[1]")
	}
}

func checkGeminiResponse(t *testing.T, what string, c modelCall, r map[string]any) {
	t.Helper()
	if len(r) != 1 {
		t.Errorf("%s: response %s, want exactly one of output or error", what, canon(r))
	}
	switch {
	case c.want.failed:
		s, _ := r["error"].(string)
		if !strings.Contains(s, c.want.failText) {
			t.Errorf("%s: response.error = %v, want it to contain %q", what, r["error"], c.want.failText)
		}
	case c.want.isError:
		if want := plainText(c); r["error"] != want {
			t.Errorf("%s: response.error = %v, want %q", what, r["error"], want)
		}
	case c.want.output != nil:
		if !reflect.DeepEqual(r["output"], c.want.output) {
			t.Errorf("%s: response.output = %s, want %s", what, canon(r["output"]), canon(c.want.output))
		}
	default:
		if want := plainText(c); r["output"] != want {
			t.Errorf("%s: response.output = %v, want %q", what, r["output"], want)
		}
	}
}
