package conduit

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit/internal/modelresult"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	pngBytes  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	jpegBytes = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
	gifBytes  = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00,")
	webpBytes = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
)

func TestShapeForModel(t *testing.T) {
	ann := &mcp.Annotations{Priority: 0.5, Audience: []mcp.Role{"user"}}
	text := &mcp.TextContent{Text: "hello", Annotations: ann}
	link := &mcp.ResourceLink{URI: "file:///etc/passwd", Name: "passwd", MIMEType: "text/plain"}
	textRes := &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "contents"}}
	tests := []struct {
		name string
		in   mcp.Content
		want mcp.Content // nil: unchanged
	}{
		{"text", text, nil},
		{"png", &mcp.ImageContent{MIMEType: "image/png", Data: pngBytes}, nil},
		{"jpeg", &mcp.ImageContent{MIMEType: "image/jpeg", Data: jpegBytes}, nil},
		{"gif", &mcp.ImageContent{MIMEType: "image/gif", Data: gifBytes}, nil},
		{"webp", &mcp.ImageContent{MIMEType: "image/webp", Data: webpBytes}, nil},
		{"svg", &mcp.ImageContent{MIMEType: "image/svg+xml", Data: svgBytes, Annotations: ann},
			&mcp.TextContent{Text: "[image: image/svg+xml, 67 bytes]", Annotations: ann}},
		{"declared png, not png", &mcp.ImageContent{MIMEType: "image/png", Data: []byte("definitely not an image")},
			&mcp.TextContent{Text: "[image: image/png, 23 bytes]"}},
		{"declared png, really jpeg", &mcp.ImageContent{MIMEType: "image/png", Data: jpegBytes},
			&mcp.ImageContent{MIMEType: "image/jpeg", Data: jpegBytes}},
		{"declared with parameters", &mcp.ImageContent{MIMEType: "image/PNG; charset=binary", Data: pngBytes},
			&mcp.ImageContent{MIMEType: "image/png", Data: pngBytes}},
		{"bmp", &mcp.ImageContent{MIMEType: "image/bmp", Data: []byte("BM\x3a\x00\x00\x00\x00\x00\x00\x00")},
			&mcp.TextContent{Text: "[image: image/bmp, 10 bytes]"}},
		{"empty image", &mcp.ImageContent{MIMEType: "image/png"}, &mcp.TextContent{Text: "[image: image/png, 0 bytes]"}},
		{"no type", &mcp.ImageContent{Data: pngBytes}, &mcp.TextContent{Text: "[image: unknown type, 33 bytes]"}},
		// No provider takes audio in a tool result: every clip is a
		// placeholder, as the adapters write it.
		{"wav", &mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFFxxxxWAVE")}, &mcp.TextContent{Text: "[audio: audio/wav, 12 bytes]"}},
		{"mp3", &mcp.AudioContent{MIMEType: "audio/mpeg", Data: []byte("ID3")}, &mcp.TextContent{Text: "[audio: audio/mpeg, 3 bytes]"}},
		{"ogg with codecs", &mcp.AudioContent{MIMEType: "audio/ogg; codecs=opus", Data: []byte("OggS")}, &mcp.TextContent{Text: "[audio: audio/ogg, 4 bytes]"}},
		{"aac", &mcp.AudioContent{MIMEType: "audio/aac", Data: make([]byte, 1024), Annotations: ann},
			&mcp.TextContent{Text: "[audio: audio/aac, 1024 bytes]", Annotations: ann}},
		{"midi", &mcp.AudioContent{MIMEType: "audio/midi", Data: []byte("MThd")}, &mcp.TextContent{Text: "[audio: audio/midi, 4 bytes]"}},
		{"empty audio", &mcp.AudioContent{MIMEType: "audio/wav"}, &mcp.TextContent{Text: "[audio: audio/wav, 0 bytes]"}},
		{"resource link", link, nil}, // TestShapeOverTheWire: never fetched
		{"embedded text resource", textRes, nil},
		{"embedded png blob", &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///i.png", MIMEType: "image/png", Blob: pngBytes}}, nil},
		{"embedded mislabelled blob", &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///i", MIMEType: "image/png", Blob: gifBytes}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///i", MIMEType: "image/gif", Blob: gifBytes}}},
		{"embedded gzip blob", &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.gz", MIMEType: "application/gzip", Blob: make([]byte, 2048)}, Annotations: ann},
			&mcp.TextContent{Text: "[resource: file:///a.gz, application/gzip, 2048 bytes]", Annotations: ann}},
		{"embedded svg blob", &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x.svg", MIMEType: "image/svg+xml", Blob: svgBytes}},
			&mcp.TextContent{Text: "[resource: file:///x.svg, image/svg+xml, 67 bytes]"}},
		{"embedded blob without type", &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x:y", Blob: []byte{1, 2}}},
			&mcp.TextContent{Text: "[resource: x:y, unknown type, 2 bytes]"}},
		{"embedded nothing", &mcp.EmbeddedResource{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &mcp.CallToolResult{Content: []mcp.Content{text, tt.in, link}, StructuredContent: map[string]any{"k": 1}, IsError: true}
			orig := *in
			origContent := append([]mcp.Content(nil), in.Content...)
			out := modelresult.Shape(in)
			want := tt.want
			if want == nil {
				if out != in {
					t.Fatalf("an unchanged result was copied: %#v", out.Content[1])
				}
				return
			}
			if out == in {
				t.Fatal("the result was not shaped")
			}
			if !reflect.DeepEqual(out.Content[1], want) {
				t.Fatalf("shaped to %#v, want %#v", out.Content[1], want)
			}
			if out.Content[0] != text || out.Content[2] != link || !out.IsError || out.StructuredContent == nil {
				t.Fatalf("the rest changed: %#v", out)
			}
			if !reflect.DeepEqual(*in, orig) || !reflect.DeepEqual(in.Content, origContent) {
				t.Fatal("the input was modified")
			}
		})
	}
	if modelresult.Shape(nil) != nil {
		t.Fatal("nil")
	}
}

func TestModelMediaTypes(t *testing.T) {
	for _, tt := range []struct {
		declared string
		data     []byte
		want     string
		ok       bool
	}{
		{"image/png", pngBytes, "image/png", true},
		{"image/jpg", jpegBytes, "image/jpeg", true},
		{"image/webp", webpBytes, "image/webp", true},
		{"application/octet-stream", pngBytes, "", false}, // not declared an image
		{"image/svg+xml", svgBytes, "", false},
		{"image/png", nil, "", false},
	} {
		got, ok := modelresult.ImageType(tt.declared, tt.data)
		if got != tt.want || ok != tt.ok {
			t.Errorf("modelresult.ImageType(%q) = %q, %v", tt.declared, got, ok)
		}
	}
	if got := modeltext.Placeholder("image", "image/svg+xml", 1024); got != "[image: image/svg+xml, 1024 bytes]" {
		t.Fatal(got)
	}
	if got := modeltext.Placeholder("audio", "", 3); got != "[audio: unknown type, 3 bytes]" {
		t.Fatal(got)
	}
}

// TestShapeOverTheWire shapes a result as the server sent it. Its resource
// link is left as it is and never fetched, though the server would answer
// a read of it.
func TestShapeOverTheWire(t *testing.T) {
	srv := newTestServer(t, "s")
	const linked = "https://example.com/never-fetched"
	srv.AddResource(&mcp.Resource{URI: linked, Name: "x", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: linked, MIMEType: "text/plain", Text: "secret"}}}, nil
		})
	addTool(srv.Server, "media", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ImageContent{MIMEType: "image/svg+xml", Data: make([]byte, 1024)},
			&mcp.ImageContent{MIMEType: "image/png", Data: pngBytes},
			&mcp.ResourceLink{URI: linked, Name: "x"},
		}}, nil
	})
	cl := newClient(t, srv.server("s"), &Options{})
	res, err := cl.CallTool(context.Background(), "media", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res = modelresult.Shape(res)
	// The size is of the decoded bytes, not of the base64 on the wire.
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "[image: image/svg+xml, 1024 bytes]" {
		t.Fatalf("content[0] = %#v", res.Content[0])
	}
	if ic, ok := res.Content[1].(*mcp.ImageContent); !ok || !bytes.Equal(ic.Data, pngBytes) {
		t.Fatalf("content[1] = %#v", res.Content[1])
	}
	if rl, ok := res.Content[2].(*mcp.ResourceLink); !ok || rl.URI != linked {
		t.Fatalf("content[2] = %#v", res.Content[2])
	}
	raw, err := cl.CallTool(context.Background(), "media", nil, nil)
	if err != nil || len(raw.Content) != 3 {
		t.Fatal(err)
	}
	if _, ok := raw.Content[0].(*mcp.ImageContent); !ok {
		t.Fatal("ShapeNone shaped")
	}
	// The requests of a call are over when it returns: a fetch would have
	// reached the server by now.
	if n := srv.method("resources/read"); n != 0 {
		t.Fatalf("the resource link was fetched %d times", n)
	}
	if srv.method("tools/call") != 2 {
		t.Fatalf("the server counted %d calls, want 2", srv.method("tools/call"))
	}
}
