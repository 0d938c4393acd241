package conduit

// The form of a result a model reads: what every provider takes, and the
// result budget. The rules live in an internal package that package
// adapters shares.

import (
	"github.com/conduitmcp/conduit/internal/modelresult"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ModelImageType returns the media type of an image a model accepts inline
// (JPEG, PNG, GIF or WebP), judged by the bytes themselves rather than by
// the declared type, which a server may get wrong; ok is false for anything
// else (SVG, a declared image that is not one, empty data).
func ModelImageType(declared string, data []byte) (mediaType string, ok bool) {
	return modelresult.ImageType(declared, data)
}

// Placeholder returns the text a model sees in place of content it cannot
// take: "[image: image/svg+xml, 1024 bytes]". mediaType is as declared
// (its parameters are dropped); size is the decoded size. It is the text
// ShapeForModel and the adapters write.
func Placeholder(kind, mediaType string, size int) string {
	return modeltext.Placeholder(kind, mediaType, size)
}

// ShapeForModel returns res prepared for a model, by the rule the adapters
// apply for every provider: images other than JPEG, PNG, GIF and WebP (SVG
// notably), every audio clip (no provider takes audio in a tool result),
// and embedded blobs that are not such images become text placeholders
// giving the type and decoded size. Accepted images keep their
// bytes, with the media type the bytes show. Nothing is fetched: a
// resource_link stays a link. res is not modified; when nothing needs to
// change, res itself is returned.
func ShapeForModel(res *mcp.CallToolResult) *mcp.CallToolResult {
	return modelresult.Shape(res)
}

// CutForModel returns res cut to maxTokens tokens of what a model reads
// of its content, as package adapters cuts an answer (see its "Result
// budget"): the content blocks are kept in order while they fit, the
// first that does not is cut (a text at a line break or a character, a
// JSON text into valid JSON, an embedded resource's text likewise) or
// dropped (an image, a link, a blob), the blocks after it are dropped,
// and a text block ends the result with a notice of what was kept and
// how to ask for less. Images count by the largest rule known (as a
// provider counts them), the client's model being unknown.
//
// structuredContent is left as it is and not counted: a client checks it
// against the tool's outputSchema, which a cut value may not match, and
// the content carries the same data for a model (the specification asks
// a tool that returns structured content to return it as text too).
//
// tokens is the estimate of the whole content. res is returned as it is
// when it is within the budget, or maxTokens is 0 or less; it is never
// modified.
func CutForModel(res *mcp.CallToolResult, maxTokens int) (out *mcp.CallToolResult, tokensIn int) {
	return modelresult.Cut(res, maxTokens)
}
