package modelresult

import (
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The result budget of a result passed on as MCP, to a client whose model
// reads it. Such clients are conduit serve's clients and conduit call's
// output. Package adapters cuts an answer in a provider's format. This
// does the same to the MCP result itself.

// Cut returns res cut to maxTokens tokens of what a model reads of its
// content. Package adapters cuts an answer the same way (see its "Result
// budget"):
//
//   - The content blocks are kept in order while they fit.
//   - The first that does not fit is cut or dropped.
//   - A text is cut at a line break or a character.
//   - A JSON text is cut into valid JSON, and an embedded resource's text
//     likewise.
//   - An image, a link or a blob is dropped.
//   - The blocks after it are dropped.
//   - A text block ends the result. It tells what was kept and how to ask
//     for less.
//
// Images count by the largest rule known, as a provider counts them. The
// client's model is unknown.
//
// structuredContent is left as it is and not counted. A client checks it
// against the tool's outputSchema, which a cut value may not match. The
// content carries the same data for a model. The specification asks a
// tool that returns structured content to return it as text too.
//
// tokensIn is the estimate of the whole content. res is returned as it is
// when it is within the budget, or when maxTokens is 0 or less. It is
// never modified.
func Cut(res *mcp.CallToolResult, maxTokens int) (out *mcp.CallToolResult, tokensIn int) {
	if res == nil {
		return nil, 0
	}
	pieces := make([]tokens.Piece, len(res.Content))
	for i, c := range res.Content {
		pieces[i] = piece(c)
	}
	f := tokens.Fit(pieces, maxTokens)
	if !f.Over() {
		return res, f.Tokens
	}
	content := make([]mcp.Content, 0, f.Keep+2)
	content = append(content, res.Content[:f.Keep]...)
	if f.HasCut {
		content = append(content, cutBlock(res.Content[f.Keep], f.Cut))
	}
	notice := modeltext.CutNotice(modeltext.Cut{Budget: maxTokens, Tokens: f.Tokens, KeptTokens: f.Kept,
		Bytes: f.Bytes, KeptBytes: f.KeptBytes, Lines: f.Lines, KeptLines: f.KeptLines, JSON: f.JSON, Replaced: f.Keep == 0 && !f.HasCut})
	cp := *res
	cp.Content = append(content, &mcp.TextContent{Text: notice})
	return &cp, f.Tokens
}

// piece is what a model reads of one content block.
func piece(c mcp.Content) tokens.Piece {
	var shown string // what a model is shown of a block kept whole
	switch c := c.(type) {
	case *mcp.TextContent:
		return tokens.Piece{Text: c.Text, Tokens: tokens.Text(c.Text)}
	case *mcp.ImageContent:
		return tokens.Piece{Whole: true, Tokens: imageTokens(c.MIMEType, c.Data)}
	case *mcp.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil:
			shown = modeltext.EmptyResource
		case r.Blob == nil:
			return tokens.Piece{Text: r.Text, Tokens: tokens.Text(r.URI) + tokens.Text(r.Text)}
		case isModelImage(r.MIMEType, r.Blob):
			return tokens.Piece{Whole: true, Tokens: imageTokens(r.MIMEType, r.Blob)}
		default:
			shown = modeltext.ResourcePlaceholder(r.URI, r.MIMEType, len(r.Blob))
		}
	case *mcp.AudioContent:
		// No provider takes audio in a tool result (ShapeForModel).
		shown = modeltext.Placeholder("audio", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		shown = c.Name + " " + c.Title + " " + c.URI + " " + c.MIMEType + " " + c.Description
	}
	return tokens.Piece{Whole: true, Tokens: tokens.Text(shown)}
}

// imageTokens counts an image by the conservative rule, the client's
// model being unknown.
func imageTokens(mediaType string, data []byte) int {
	mt, _ := ImageType(mediaType, data)
	return tokens.AnyImage(tokens.ImageSize(mt, data))
}

func isModelImage(mediaType string, data []byte) bool {
	_, ok := ImageType(mediaType, data)
	return ok
}

// cutBlock is c, a text or an embedded text resource, with its text cut
// to text.
func cutBlock(c mcp.Content, text string) mcp.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		cp := *c
		cp.Text = text
		return &cp
	case *mcp.EmbeddedResource:
		rc := *c.Resource
		rc.Text = text
		return &mcp.EmbeddedResource{Resource: &rc, Meta: c.Meta, Annotations: c.Annotations}
	}
	return c
}
