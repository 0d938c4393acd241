package driver

import (
	"github.com/conduitmcp/conduit/adapters/internal/budget"
	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a driver's Prepare is made of, for drivers in and out of this
// module alike. A result is rendered into neutral parts. Then it is
// measured and cut to its budget. Then it is written in the provider's
// shape. The built-in drivers use the same functions. So every answer is
// rendered and cut one way.

// Rendered is a result in provider-neutral form. It holds its parts, or
// the structuredContent value standing for the whole. It says whether it
// is an error.
type Rendered = render.Rendered

// Part is one piece of a Rendered: a text, or an image the provider takes.
type Part = render.Part

// PartKind is the kind of a Part.
type PartKind = render.PartKind

// The kinds of Part.
const (
	PartText  = render.PartText
	PartImage = render.PartImage
)

// RenderOptions are the options of [Render]. They set the structured mode,
// whether images stay images, and the provider's image limit.
type RenderOptions = render.RenderOptions

// ImageLimit is what a provider accepts of one image in an answer.
type ImageLimit = render.ImageLimit

// ImageRule is a provider's tokens for an image of w×h pixels.
type ImageRule = budget.ImageRule

// Writer writes a provider's answer of a rendered result. notice is the
// notice of a structured value that was cut, for the provider to place.
type Writer = budget.Writer

// Rendering is a Pending made by [Pend]. ReadAs sets what conduit's read
// tool reads of a structured result.
type Rendering = budget.Pending

// EmptyError is the text of an error result without content, which
// providers refuse empty.
const EmptyError = modeltext.EmptyError

// Render turns a result's content into parts (see [RenderOptions]).
// Content a model cannot take inline becomes a placeholder. Every string
// is valid UTF-8. o may be nil.
func Render(res *mcp.CallToolResult, o *RenderOptions) Rendered { return render.Render(res, o) }

// ErrorRendering is the rendering of a failed call: err's text, for the
// model.
func ErrorRendering(err error) Rendered { return budget.ErrorText(err) }

// LimitOf is the image limit an answer applies. It is def, with o's
// MaxImageBytes in its place when set. o may be nil.
func LimitOf(o *toolcall.AnswerOptions, def ImageLimit) ImageLimit { return render.Limit(o, def) }

// Pend returns the Pending answer of r, counted by img and written by
// write. A driver's Prepare returns it.
func Pend(r Rendered, img ImageRule, write Writer) *Rendering { return budget.Pend(r, img, write) }

// Answer writes p alone within o's budget (o.MaxResultTokens; o may be
// nil).
func Answer(p *Rendering, o *toolcall.AnswerOptions) map[string]any { return budget.Answer(p, o) }

// Text is parts' text, one a line, images as placeholders.
func Text(parts []Part) string { return render.Text(parts) }

// ImageTokens is the conservative image rule. It is the largest of the
// rules conduit knows. It serves a provider whose models count images
// differently.
func ImageTokens(w, h int) int { return tokens.AnyImage(w, h) }

// Decode turns a response into a JSON object. The response may be []byte,
// json.RawMessage, a string, a map[string]any or a value that marshals to
// JSON. A map is used as it is, not copied. A driver must not modify it.
func Decode(response any) (map[string]any, error) { return jsonv.Decode(response) }

// Args returns a call's arguments as a decoded response holds them, in the
// form toolcall.Raw.Args takes. present says the field was there at all.
// JSON null and a string are kept as JSON text, refused as not an object.
func Args(v any, present bool) any { return render.DecodedArgs(v, present) }
