package render_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/modelresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRender(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	res := &mcp.CallToolResult{
		Content: []mcp.Content{
			&mcp.TextContent{Text: "t"},
			&mcp.ImageContent{MIMEType: "image/png", Data: png},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte("<svg/>")}, // declared PNG, is not
			&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
			&mcp.ResourceLink{URI: "u://x", Title: "Title only"},
			&mcp.ResourceLink{URI: "u://y"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "u://b", Blob: []byte{1, 2}}},
			&mcp.EmbeddedResource{},
		},
		StructuredContent: map[string]any{"k": "v"},
	}
	r := render.Render(res, &render.RenderOptions{Mode: toolcall.StructuredAppend, Images: true})
	var texts []string
	for _, p := range r.Parts {
		if p.Kind == render.PartImage {
			texts = append(texts, "IMAGE "+p.MediaType)
		} else {
			texts = append(texts, p.Text)
		}
	}
	want := []string{"t", "IMAGE image/png", "[image: image/png, 6 bytes]", "[audio: audio/wav, 4 bytes]",
		"[resource] Title only <u://x>", "[resource] <u://y>", "[resource: u://b, unknown type, 2 bytes]", "[resource]", `{"k":"v"}`}
	if !reflect.DeepEqual(texts, want) {
		t.Errorf("got  %q\nwant %q", texts, want)
	}
	// nil options are the defaults: images become placeholders, and
	// structuredContent beside content is left out.
	r = render.Render(res, nil)
	if len(r.Parts) != len(want)-1 || r.Parts[1].Kind == render.PartImage || r.Parts[1].Text != "[image: image/png, 16 bytes]" {
		t.Errorf("nil options: %+v", r.Parts)
	}
	// StructuredValue hands over a plain JSON value, whatever the
	// structuredContent was.
	type weather struct {
		Temp int `json:"temp"`
	}
	for _, sc := range []any{weather{22}, json.RawMessage(`{"temp":22}`), map[string]any{"temp": 22.0}} {
		r := render.Render(&mcp.CallToolResult{StructuredContent: sc}, &render.RenderOptions{Mode: toolcall.StructuredPrefer, StructuredValue: true})
		if !reflect.DeepEqual(r.Structured, map[string]any{"temp": 22.0}) {
			t.Errorf("%T: %#v", sc, r.Structured)
		}
	}
}

func TestErrorText(t *testing.T) {
	if got := render.ErrorText(&conduit.Error{Kind: conduit.ErrDenied, Message: "No."}); got != "No." {
		t.Error(got)
	}
	if got := render.ErrorText(errors.New("boom")); got != "boom" {
		t.Error(got)
	}
	if got := render.ErrorText(nil); got != "The call produced no result." {
		t.Error(got)
	}
}

// adapters.ShapeForModel and Render apply one rule: what Render makes of a
// result is what it makes of the shaped result, and what ShapeForModel
// turns into text is text in Render too (every audio clip among them).
func TestShapeAndRenderAgree(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	for _, c := range []mcp.Content{
		&mcp.TextContent{Text: "t"},
		&mcp.ImageContent{MIMEType: "image/png", Data: png},
		&mcp.ImageContent{MIMEType: "image/svg+xml; charset=utf-8", Data: []byte("<svg/>")},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFFxxxxWAVE")},
		&mcp.AudioContent{MIMEType: "audio/ogg; codecs=opus", Data: []byte("OggS")},
		&mcp.AudioContent{MIMEType: "audio/aac", Data: []byte{1}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "u://b", MIMEType: "application/gzip", Blob: []byte{1, 2}}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "u://p", Blob: png}},
	} {
		res := &mcp.CallToolResult{Content: []mcp.Content{c}}
		shaped := modelresult.Shape(res)
		for _, o := range []*render.RenderOptions{nil, {Images: true}} {
			raw, sh := render.Render(res, o), render.Render(shaped, o)
			if !reflect.DeepEqual(raw, sh) {
				t.Errorf("%T %+v: rendered %+v, shaped and rendered %+v", c, o, raw.Parts, sh.Parts)
			}
		}
		if tc, ok := shaped.Content[0].(*mcp.TextContent); ok && c != shaped.Content[0] {
			if got := render.Render(res, &render.RenderOptions{Images: true}).Parts[0].Text; got != tc.Text {
				t.Errorf("%T: ShapeForModel says %q, Render %q", c, tc.Text, got)
			}
		}
		if _, ok := shaped.Content[0].(*mcp.AudioContent); ok {
			t.Errorf("audio survived ShapeForModel: %+v", c)
		}
	}
}
