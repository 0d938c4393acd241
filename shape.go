package conduit

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The media types every provider accepts as inline images and audio.
var (
	modelImageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}
	modelAudioTypes = map[string]bool{
		"audio/wav": true, "audio/x-wav": true, "audio/wave": true, "audio/vnd.wave": true,
		"audio/mpeg": true, "audio/mp3": true, "audio/ogg": true, "audio/webm": true,
		"audio/flac": true, "audio/x-flac": true,
	}
)

// ModelImageType returns the media type of an image a model accepts inline
// (JPEG, PNG, GIF or WebP), judged by the bytes themselves rather than by
// the declared type, which a server may get wrong; ok is false for anything
// else (SVG, a declared image that is not one, empty data).
func ModelImageType(declared string, data []byte) (mediaType string, ok bool) {
	if len(data) == 0 || !strings.HasPrefix(baseType(declared), "image/") {
		return "", false
	}
	sniffed := baseType(http.DetectContentType(data))
	if !modelImageTypes[sniffed] {
		return "", false
	}
	return sniffed, true
}

// ModelAudioType reports whether a model accepts audio of this declared type
// (WAV, MP3, Ogg, WebM, FLAC), returning the type without parameters.
func ModelAudioType(declared string) (mediaType string, ok bool) {
	t := baseType(declared)
	return t, modelAudioTypes[t] && t != ""
}

func baseType(t string) string {
	if mt, _, err := mime.ParseMediaType(t); err == nil {
		return mt
	}
	return strings.ToLower(strings.TrimSpace(t))
}

// Placeholder returns the text a model sees in place of content it cannot
// take: "[image: image/svg+xml, 1024 bytes]". size is the decoded size.
func Placeholder(kind, mediaType string, size int) string {
	if mediaType == "" {
		mediaType = "unknown type"
	}
	return fmt.Sprintf("[%s: %s, %d bytes]", kind, mediaType, size)
}

// ShapeForModel returns res prepared for a model: images other than JPEG,
// PNG, GIF and WebP (SVG notably), audio other than WAV, MP3, Ogg, WebM and
// FLAC, and embedded blobs that are not such images become text
// placeholders giving the type and decoded size. Accepted images keep their
// bytes, with the media type the bytes show. Nothing is fetched: a
// resource_link stays a link. res is not modified; when nothing needs to
// change, res itself is returned.
func ShapeForModel(res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil {
		return nil
	}
	var out []mcp.Content
	for i, c := range res.Content {
		shaped := shapeContent(c)
		if shaped != c && out == nil {
			out = make([]mcp.Content, i, len(res.Content))
			copy(out, res.Content[:i])
		}
		if out != nil {
			out = append(out, shaped)
		}
	}
	if out == nil {
		return res
	}
	cp := *res
	cp.Content = out
	return &cp
}

func shapeContent(c mcp.Content) mcp.Content {
	switch c := c.(type) {
	case *mcp.ImageContent:
		mt, ok := ModelImageType(c.MIMEType, c.Data)
		if !ok {
			return &mcp.TextContent{Text: Placeholder("image", baseType(c.MIMEType), len(c.Data)), Annotations: c.Annotations}
		}
		if mt != c.MIMEType {
			cp := *c
			cp.MIMEType = mt
			return &cp
		}
	case *mcp.AudioContent:
		if _, ok := ModelAudioType(c.MIMEType); !ok || len(c.Data) == 0 {
			return &mcp.TextContent{Text: Placeholder("audio", baseType(c.MIMEType), len(c.Data)), Annotations: c.Annotations}
		}
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil || r.Blob == nil {
			return c
		}
		mt, ok := ModelImageType(r.MIMEType, r.Blob)
		if !ok {
			return &mcp.TextContent{
				Text:        fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, orUnknown(baseType(r.MIMEType)), len(r.Blob)),
				Annotations: c.Annotations,
			}
		}
		if mt != r.MIMEType {
			rc := *r
			rc.MIMEType = mt
			return &mcp.EmbeddedResource{Resource: &rc, Meta: c.Meta, Annotations: c.Annotations}
		}
	}
	return c
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}
