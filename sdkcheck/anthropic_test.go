package sdkcheck

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/conduitmcp/conduit/adapters"
)

var anthropicName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// TestAnthropicToolDefinitions decodes every tool definition into the
// SDK's anthropic.ToolParam and anthropic.ToolUnionParam, and the whole
// list into MessageNewParams.Tools.
func TestAnthropicToolDefinitions(t *testing.T) {
	k := newKit(t)
	for _, o := range []*adapters.ToolsOptions{
		{},
		{Listing: adapters.ListingOptions{CacheLast: true}},
		{Listing: adapters.ListingOptions{CacheLast: true, CacheTTL: "1h"}},
	} {
		t.Run(fmt.Sprintf("CacheLast=%v,CacheTTL=%q", o.Listing.CacheLast, o.Listing.CacheTTL), func(t *testing.T) {
			l := k.list(t, adapters.Anthropic, o)
			for i, def := range l.Tools {
				name, _ := def["name"].(string)
				what := fmt.Sprintf("tool %d (%s)", i, name)
				p := decodeInto[anthropic.ToolParam](t, what, def, false)
				if p.Name == "" || p.Name != name || !anthropicName.MatchString(p.Name) {
					t.Errorf("%s: ToolParam.Name = %q", what, p.Name)
				}
				if typ := lookup(def, "input_schema", "type"); typ != "object" {
					t.Errorf("%s: input_schema.type = %v, the API requires \"object\"", what, typ)
				}
				if _, has := def["description"]; has != p.Description.Valid() {
					t.Errorf("%s: description sent %v, ToolParam.Description set %v", what, has, p.Description.Valid())
				}
				last := i == len(l.Tools)-1
				if got := p.CacheControl.Type != "" && def["cache_control"] != nil; got != (last && o.Listing.CacheLast) {
					t.Errorf("%s: cache_control set = %v, want %v", what, got, last && o.Listing.CacheLast)
				}
				if last && o.Listing.CacheTTL != "" && string(p.CacheControl.TTL) != o.Listing.CacheTTL {
					t.Errorf("%s: CacheControl.TTL = %q, want %q", what, p.CacheControl.TTL, o.Listing.CacheTTL)
				}

				u := decodeInto[anthropic.ToolUnionParam](t, what, def, false)
				if u.OfTool == nil {
					t.Errorf("%s: ToolUnionParam did not decode as OfTool (a custom tool): %s", what, canon(u))
				}
			}
			tools := decodeInto[[]anthropic.ToolUnionParam](t, "the tools list", l.Tools, false)
			if len(tools) != len(l.Tools) {
				t.Errorf("%d SDK tools, %d listed", len(tools), len(l.Tools))
			}
		})
	}
}

// anthropicMessage is a Messages API response in the shape the API
// reference documents (a tool_use stop with a thinking and a text block
// before the tool_use blocks), calling every tool of the calls.
func anthropicMessage(calls []modelCall) []byte {
	var blocks []string
	blocks = append(blocks,
		`{"type":"thinking","thinking":"The user wants every tool exercised.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}`,
		`{"type":"text","text":"I'll run the tools for you."}`)
	for _, c := range calls {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":"toolu_01A09q90qw90lq9178%s","name":%q,"input":%s}`, c.id, c.name, c.args))
	}
	return []byte(`{
  "id": "msg_01Aq9w938a90dw8q",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [` + strings.Join(blocks, ",\n    ") + `],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {
    "input_tokens": 2095,
    "output_tokens": 503,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "service_tier": "standard"
  }
}`)
}

// TestAnthropicToolCalls feeds an anthropic.Message, as the SDK decodes a
// response, to ExecuteToolCalls (by value and by pointer), decodes every
// answer into the SDK's tool_result params, and builds the next turn's
// MessageNewParams.
func TestAnthropicToolCalls(t *testing.T) {
	calls := modelCalls()
	body := anthropicMessage(calls)
	var msg anthropic.Message
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("the example response does not decode into anthropic.Message: %v", err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("StopReason = %q", msg.StopReason)
	}
	var uses []anthropic.ToolUseBlock
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			uses = append(uses, b.AsToolUse())
		}
	}
	if len(uses) != len(calls) {
		t.Fatalf("the SDK decoded %d tool_use blocks, want %d", len(uses), len(calls))
	}

	listing, exec := runAll(t, adapters.Anthropic, &adapters.ToolsOptions{Listing: adapters.ListingOptions{CacheLast: true}}, calls, body, msg, &msg, msg.ToParam())

	for i, c := range calls {
		res := exec.Results[i]
		what := fmt.Sprintf("answer %d (%s)", i, c.name)
		b := decodeInto[anthropic.ToolResultBlockParam](t, what, res, false)
		if b.ToolUseID != uses[i].ID {
			t.Errorf("%s: ToolUseID = %q, want %q", what, b.ToolUseID, uses[i].ID)
		}
		wantErr := c.want.isError || c.want.failed
		if b.IsError.Valid() != wantErr || (wantErr && !b.IsError.Value) {
			t.Errorf("%s: IsError = %v (set %v), want %v", what, b.IsError.Value, b.IsError.Valid(), wantErr)
		}
		checkAnthropicContent(t, what, c, b.Content)

		u := decodeInto[anthropic.ContentBlockParamUnion](t, what, res, false)
		if u.OfToolResult == nil {
			t.Errorf("%s: ContentBlockParamUnion did not decode as OfToolResult: %s", what, canon(u))
		}
	}

	// The next turn: the assistant's message as the SDK makes it a param,
	// then a user message of conduit's tool_result blocks.
	userTurn := map[string]any{"role": "user", "content": exec.Results}
	user := decodeInto[anthropic.MessageParam](t, "the user turn", userTurn, false)
	if user.OfUser == nil {
		t.Fatalf("the user turn did not decode as a user message: %s", canon(user))
	}
	tools := decodeInto[[]anthropic.ToolUnionParam](t, "the tools", listing.Tools, false)
	req := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Tools:     tools,
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("Run every tool.")),
			msg.ToParam(),
			user,
		},
	}
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("MessageNewParams does not marshal: %v", err)
	}
	var sent map[string]any
	if err := json.Unmarshal(data, &sent); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "MessageNewParams.tools", listing.Tools, sent["tools"])
	sameJSON(t, "MessageNewParams.messages[2]", userTurn, lookup(sent, "messages", 2))
	if _, has := sent["tool_choice"]; has {
		t.Errorf("tool_choice is set: %v", sent["tool_choice"])
	}
	for i, u := range uses {
		got := lookup(sent, "messages", 1, "content", i+2, "id")
		if got != u.ID {
			t.Errorf("messages[1].content[%d].id = %v, want %s", i+2, got, u.ID)
		}
	}
}

func checkAnthropicContent(t *testing.T, what string, c modelCall, content []anthropic.ToolResultBlockParamContentUnion) {
	t.Helper()
	if c.want.failed {
		if len(content) != 1 || content[0].OfText == nil || !strings.Contains(content[0].OfText.Text, c.want.failText) {
			t.Errorf("%s: content %s, want one text block containing %q", what, canon(content), c.want.failText)
		}
		return
	}
	if len(content) != len(c.want.parts) {
		t.Errorf("%s: %d content blocks %s, want %d", what, len(content), canon(content), len(c.want.parts))
		return
	}
	for j, p := range c.want.parts {
		got := content[j]
		switch {
		case p.image != "":
			if got.OfImage == nil || got.OfImage.Source.OfBase64 == nil {
				t.Errorf("%s: block %d is %s, want a base64 image", what, j, canon(got))
				continue
			}
			src := got.OfImage.Source.OfBase64
			if string(src.MediaType) != p.image || src.Data != base64.StdEncoding.EncodeToString(p.data) {
				t.Errorf("%s: block %d is an image of %s with %d base64 characters, want %s", what, j, src.MediaType, len(src.Data), p.image)
			}
		default:
			if got.OfText == nil || got.OfText.Text != p.text {
				t.Errorf("%s: block %d is %s, want text %q", what, j, canon(got), p.text)
			}
		}
	}
}
