package sdkcheck

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/auth/bearer"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// The AWS SDK's Converse types are unions (interfaces) and smithy
// documents, which encoding/json neither decodes nor encodes in the wire
// shape. So these checks go through the SDK's own serializers: an SDK
// client sends its request to a local server, which records the body,
// and answers with a Converse response for the SDK to decode. conduit's
// listing and answers are rebuilt as SDK values, reading conduit's JSON by
// the wire's field names; the SDK's body must then equal conduit's JSON.
// A field conduit misnames, adds or drops makes the two differ.

// converseServer answers every Converse request with response and
// records the request bodies.
type converseServer struct {
	response []byte
	mu       sync.Mutex
	bodies   []map[string]any
	auth     []string
}

func (s *converseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(data, &body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.response)
}

func bedrockClient(t *testing.T, s *converseServer) *bedrockruntime.Client {
	srv := httptest.NewTLSServer(s) // the SDK sends a bearer token over HTTPS only
	t.Cleanup(srv.Close)
	return bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.AnonymousCredentials{}, HTTPClient: srv.Client(),
		BearerAuthTokenProvider: bearer.StaticTokenProvider{Token: bearer.Token{Value: "the-key"}}})
}

func object(v any) map[string]any { m, _ := v.(map[string]any); return m }
func list(v any) []any            { l, _ := v.([]any); return l }
func strOf(v any) string          { s, _ := v.(string); return s }

// sdkTool rebuilds conduit's toolSpec definition as the SDK's value.
func sdkTool(def map[string]any) types.Tool {
	spec := object(def["toolSpec"])
	ts := types.ToolSpecification{Name: aws.String(strOf(spec["name"])),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(object(spec["inputSchema"])["json"])}}
	if d, ok := spec["description"].(string); ok {
		ts.Description = aws.String(d)
	}
	return &types.ToolMemberToolSpec{Value: ts}
}

// sdkAnswer rebuilds conduit's toolResult block as the SDK's value, and
// counts its images, so that the test knows it checked some.
func sdkAnswer(t *testing.T, answer map[string]any, images *int) types.ContentBlock {
	tr := object(answer["toolResult"])
	b := types.ToolResultBlock{ToolUseId: aws.String(strOf(tr["toolUseId"]))}
	if s, ok := tr["status"].(string); ok {
		b.Status = types.ToolResultStatus(s)
		if !slices.Contains(b.Status.Values(), b.Status) {
			t.Errorf("status %q is none of the SDK's %v", s, b.Status.Values())
		}
	}
	for _, c := range list(tr["content"]) {
		c := object(c)
		switch {
		case c["text"] != nil:
			b.Content = append(b.Content, &types.ToolResultContentBlockMemberText{Value: strOf(c["text"])})
		case c["image"] != nil:
			img := object(c["image"])
			data, err := base64.StdEncoding.DecodeString(strOf(object(img["source"])["bytes"]))
			if err != nil {
				t.Fatalf("image bytes: %v", err)
			}
			if f := types.ImageFormat(strOf(img["format"])); !slices.Contains(f.Values(), f) {
				t.Errorf("image format %q is none of the SDK's %v", f, f.Values())
			}
			*images++
			b.Content = append(b.Content, &types.ToolResultContentBlockMemberImage{Value: types.ImageBlock{
				Format: types.ImageFormat(strOf(img["format"])), Source: &types.ImageSourceMemberBytes{Value: data}}})
		default:
			t.Errorf("a content block the SDK has no member for: %v", c)
		}
	}
	return &types.ContentBlockMemberToolResult{Value: b}
}

// TestBedrockShapesThroughTheSDK lists the kit for Bedrock, runs a
// response of the SDK's decoding through conduit, and sends listing and
// answers back through the SDK: the SDK's request body carries conduit's
// JSON unchanged, and the SDK reads the response's toolUse blocks as
// conduit's Parse does.
func TestBedrockShapesThroughTheSDK(t *testing.T) {
	k := newKit(t)
	l := k.list(t, adapters.Bedrock, nil)
	var raws []toolcall.Raw
	for _, c := range modelCalls() {
		var args any
		if err := json.Unmarshal([]byte(c.args), &args); err != nil {
			t.Fatal(err)
		}
		raws = append(raws, toolcall.Raw{ID: "tooluse_" + c.id, Name: c.name, Args: args})
	}
	response, err := json.Marshal(adaptertest.FakeOf(adapters.Bedrock).Response("Working on it.", raws...))
	if err != nil {
		t.Fatal(err)
	}
	s := &converseServer{response: response}
	client := bedrockClient(t, s)
	ctx := context.Background()

	// The SDK decodes the response; its toolUse blocks are conduit's calls.
	out, err := client.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("anthropic.claude-sonnet-4-5-v1:0"),
		Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Run every tool."}}}}})
	if err != nil {
		t.Fatalf("the SDK does not read the response: %v", err)
	}
	if out.StopReason != types.StopReasonToolUse {
		t.Errorf("stop reason %q", out.StopReason)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	parsed, err := adapters.Bedrock.Parse(response)
	if err != nil {
		t.Fatal(err)
	}
	var uses []types.ToolUseBlock
	for _, b := range msg.Content {
		if u, ok := b.(*types.ContentBlockMemberToolUse); ok {
			uses = append(uses, u.Value)
		}
	}
	if len(uses) != len(parsed) {
		t.Fatalf("the SDK reads %d toolUse blocks, conduit %d", len(uses), len(parsed))
	}
	for i, u := range uses {
		// The SDK's document writes its JSON itself (a number decoded
		// into any is a document.Number, a string to encoding/json).
		data, err := u.Input.MarshalSmithyDocument()
		if err != nil {
			t.Fatal(err)
		}
		var input any
		if err := json.Unmarshal(data, &input); err != nil {
			t.Fatal(err)
		}
		if aws.ToString(u.ToolUseId) != parsed[i].ID || aws.ToString(u.Name) != parsed[i].Name || canon(input) != canon(parsed[i].Args) {
			t.Errorf("call %d: the SDK reads %s %s %s, conduit %s %s %s", i, aws.ToString(u.ToolUseId), aws.ToString(u.Name), canon(input),
				parsed[i].ID, parsed[i].Name, canon(parsed[i].Args))
		}
	}

	// The SDK's own value marshalled with encoding/json is not the wire
	// shape: conduit takes the body as it came, and says so.
	if _, err := adapters.Bedrock.Parse(out); err == nil {
		t.Error("conduit parsed an SDK value marshalled by encoding/json; the package doc says it cannot")
	}

	exec, err := adapters.ExecuteToolCalls(ctx, k.hub, adapters.Bedrock, response, execOptions(l))
	if err != nil {
		t.Fatal(err)
	}
	var tools []types.Tool
	for _, def := range l.Tools {
		tools = append(tools, sdkTool(def))
	}
	var answers []types.ContentBlock
	images := 0
	for _, a := range exec.Results {
		answers = append(answers, sdkAnswer(t, a, &images))
	}
	if images == 0 {
		t.Error("no answer carried an image")
	}
	if _, err := client.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("m"),
		Messages:   []types.Message{msg, {Role: types.ConversationRoleUser, Content: answers}},
		ToolConfig: &types.ToolConfiguration{Tools: tools}}); err != nil {
		t.Fatal(err)
	}
	body := s.bodies[len(s.bodies)-1]
	// The SDK authenticates with an API key as conduit's Wire does.
	h := http.Header{}
	adapters.Bedrock.Wire().Authorize(h, "the-key")
	if got := s.auth[len(s.auth)-1]; got != h.Get("Authorization") {
		t.Errorf("the SDK sends Authorization %q, conduit's Wire %q", got, h.Get("Authorization"))
	}
	if got, want := jsonValue(t, object(body["toolConfig"])["tools"]), jsonValue(t, l.Tools); !reflect.DeepEqual(got, want) {
		t.Errorf("the SDK sends the tools as\n%s\nconduit lists\n%s", canon(got), canon(want))
	}
	sent := list(body["messages"])
	if got, want := jsonValue(t, object(sent[len(sent)-1])["content"]), jsonValue(t, exec.Results); !reflect.DeepEqual(got, want) {
		t.Errorf("the SDK sends the answers as\n%s\nconduit answers\n%s", canon(got), canon(want))
	}
	// conduit's next request carries the same conversation.
	w := adapters.Bedrock.Wire()
	turn, err := w.Turn(object(jsonValue(t, json.RawMessage(response))))
	if err != nil {
		t.Fatal(err)
	}
	conv := append(turn.Items, w.Answers(exec.Results)...)
	if got, want := jsonValue(t, sent), jsonValue(t, conv); !reflect.DeepEqual(got, want) {
		t.Errorf("the SDK sends the conversation as\n%s\nconduit's Wire builds\n%s", canon(got), canon(want))
	}
}
