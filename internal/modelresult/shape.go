// Package modelresult puts a tool's result in the form a model reads. It
// keeps the content every provider takes, and applies the result budget.
// Package adapters exports it as ShapeForModel and CutForModel.
package modelresult

import (
	"net/http"
	"strings"

	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The media types every provider accepts as inline images.
var modelImageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// ImageType returns the media type of an image a model accepts inline:
// JPEG, PNG, GIF or WebP. It judges by the bytes themselves, not by the
// declared type, which a server may get wrong. ok is false for anything
// else: SVG, a declared image that is not one, empty data.
func ImageType(declared string, data []byte) (mediaType string, ok bool) {
	if len(data) == 0 || !strings.HasPrefix(modeltext.BaseType(declared), "image/") {
		return "", false
	}
	sniffed := modeltext.BaseType(http.DetectContentType(data))
	if !modelImageTypes[sniffed] {
		return "", false
	}
	return sniffed, true
}

// Shape returns res prepared for a model, by the rule the adapters apply
// for every provider. These become text placeholders giving the type and
// decoded size:
//
//   - images other than JPEG, PNG, GIF and WebP (SVG notably);
//   - every audio clip, since no provider takes audio in a tool result;
//   - embedded blobs that are not such images.
//
// Accepted images keep their bytes, with the media type the bytes show.
// Nothing is fetched: a resource_link stays a link. res is not modified.
// When nothing needs to change, res itself is returned.
func Shape(res *mcp.CallToolResult) *mcp.CallToolResult {
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
		mt, ok := ImageType(c.MIMEType, c.Data)
		if !ok {
			return &mcp.TextContent{Text: modeltext.Placeholder("image", c.MIMEType, len(c.Data)), Annotations: c.Annotations}
		}
		if mt != c.MIMEType {
			cp := *c
			cp.MIMEType = mt
			return &cp
		}
	case *mcp.AudioContent:
		return &mcp.TextContent{Text: modeltext.Placeholder("audio", c.MIMEType, len(c.Data)), Annotations: c.Annotations}
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil || r.Blob == nil {
			return c
		}
		mt, ok := ImageType(r.MIMEType, r.Blob)
		if !ok {
			return &mcp.TextContent{Text: modeltext.ResourcePlaceholder(r.URI, r.MIMEType, len(r.Blob)), Annotations: c.Annotations}
		}
		if mt != r.MIMEType {
			rc := *r
			rc.MIMEType = mt
			return &mcp.EmbeddedResource{Resource: &rc, Meta: c.Meta, Annotations: c.Annotations}
		}
	}
	return c
}
