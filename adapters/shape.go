// The form of a result a model reads (what every provider takes, and the
// result budget), and the names it calls tools by, for a program that
// hands results to a model itself.
package adapters

import (
	"github.com/conduitmcp/conduit/internal/modelresult"
	"github.com/conduitmcp/conduit/internal/names"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
// of its content, as the adapters cut an answer (see "Result budget" in
// the package doc): the content blocks are kept in order while they fit, the
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

// SanitizeName maps a tool name to the character set every provider
// accepts, ^[A-Za-z_][A-Za-z0-9_-]{0,63}$. Other characters become '_'.
// A name that does not start with a letter or '_' gets a '_' in front, as
// Gemini requires. A name over 64 characters is cut and given a stable
// hash of the whole name, so two long names that share a prefix stay
// distinct. Hubs and clients name their tools by it.
func SanitizeName(name string) string { return names.Sanitize(name) }
