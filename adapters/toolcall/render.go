package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Structured says how a result's structuredContent is used.
type Structured int

const (
	// StructuredDefault is the provider's default: StructuredAuto for
	// Anthropic and OpenAI, StructuredPrefer for Gemini.
	StructuredDefault Structured = iota
	// StructuredAuto uses structuredContent, as JSON text, only when the
	// result has no content.
	StructuredAuto
	// StructuredPrefer uses structuredContent in place of the content when
	// there is one.
	StructuredPrefer
	// StructuredAppend adds structuredContent, as JSON text, after the
	// content.
	StructuredAppend
	// StructuredIgnore never uses structuredContent.
	StructuredIgnore
)

// ParseStructured parses "auto", "prefer", "append" or "ignore".
func ParseStructured(s string) (Structured, error) {
	switch s {
	case "", "default":
		return StructuredDefault, nil
	case "auto":
		return StructuredAuto, nil
	case "prefer":
		return StructuredPrefer, nil
	case "append":
		return StructuredAppend, nil
	case "ignore":
		return StructuredIgnore, nil
	}
	return 0, fmt.Errorf("unknown structured mode %q (auto, prefer, append or ignore)", s)
}

// AnswerOptions are the options of a provider's answer function.
type AnswerOptions struct {
	// Structured says how structuredContent is used.
	Structured Structured
	// ErrorPrefix, for OpenAI, which has no error flag, starts the text of
	// an error answer: DefaultErrorPrefix when empty, nothing at all with
	// NoErrorPrefix.
	ErrorPrefix   string
	NoErrorPrefix bool
	// MaxImageBytes is the largest image an answer carries, in bytes of
	// its base64 text: 0 is the provider's documented limit
	// (anthropic.MaxImageBytes, openai.MaxImageBytes), negative none. An
	// image over it becomes a placeholder saying so; the rest of the
	// result is kept. Answers that carry no images (OpenAI Chat, Gemini)
	// ignore it.
	MaxImageBytes int
}

// DefaultErrorPrefix starts OpenAI error answers unless
// AnswerOptions.ErrorPrefix says otherwise.
const DefaultErrorPrefix = "Error: "

// Prefix returns the error prefix o asks for.
func (o *AnswerOptions) Prefix() string {
	switch {
	case o == nil || (o.ErrorPrefix == "" && !o.NoErrorPrefix):
		return DefaultErrorPrefix
	case o.NoErrorPrefix:
		return ""
	}
	return o.ErrorPrefix
}

// PartKind is the kind of a rendered part.
type PartKind int

// The kinds of part. Everything a provider cannot take inline has already
// become text.
const (
	PartText PartKind = iota
	PartImage
)

// Part is one piece of a rendered result.
type Part struct {
	Kind PartKind
	// Text of a PartText.
	Text string
	// MediaType and Data of a PartImage: an image whose bytes are JPEG, PNG,
	// GIF or WebP, with the media type the bytes show.
	MediaType string
	Data      []byte
}

// Rendered is a result in provider-neutral form.
type Rendered struct {
	Parts []Part
	// Structured is the structuredContent value standing for the whole
	// result, set only when RenderOptions.StructuredValue asked for it and
	// the mode chose it (Gemini's response.output).
	Structured any
	IsError    bool
}

// RenderOptions are the options of Render.
type RenderOptions struct {
	// Mode is the structured mode, already resolved from the default.
	Mode Structured
	// Images keeps accepted images as PartImage; otherwise they become
	// placeholders.
	Images bool
	// StructuredValue returns a chosen structuredContent as a value rather
	// than as JSON text.
	StructuredValue bool
	// Limit is the provider's limit on one image, with Images: an image
	// over it becomes a placeholder that says why.
	Limit ImageLimit
}

// Render turns a result's content into parts. Content a model cannot take
// inline becomes text: images other than JPEG, PNG, GIF and WebP, every
// audio clip, and embedded blobs that are not such images become
// placeholders, even when the result was not shaped; a resource_link
// becomes "[resource] name <uri> (mime)" and is never fetched; an embedded
// text resource becomes its text under a "[resource: uri]" header. An
// image over o.Limit becomes a placeholder that says why.
//
// Every string of the rendering is valid UTF-8: text, resource text and
// URIs, media types and structuredContent's strings are repaired (invalid
// sequences become U+FFFD) before they reach JSON, at the cost of a scan
// when they are already valid; res is not modified. o may be nil for the
// defaults.
func Render(res *mcp.CallToolResult, o *RenderOptions) Rendered {
	if o == nil {
		o = &RenderOptions{}
	}
	r := Rendered{IsError: res.IsError}
	sc := res.StructuredContent
	useSC := false
	switch o.Mode {
	case StructuredAuto, StructuredDefault:
		useSC = sc != nil && len(res.Content) == 0
	case StructuredPrefer:
		useSC = sc != nil
	}
	if useSC && o.StructuredValue {
		r.Structured = jsonv.ValidValue(plainJSON(sc))
		return r
	}
	if !useSC {
		r.Parts = make([]Part, 0, len(res.Content)+1)
		for _, c := range res.Content {
			r.Parts = append(r.Parts, part(c, o))
		}
	}
	if sc != nil && (useSC || o.Mode == StructuredAppend) {
		r.Parts = append(r.Parts, Part{Kind: PartText, Text: jsonText(jsonv.ValidValue(sc))})
	}
	return r
}

func part(c mcp.Content, o *RenderOptions) Part {
	switch c := c.(type) {
	case *mcp.TextContent:
		return Part{Kind: PartText, Text: jsonv.ValidString(c.Text)}
	case *mcp.ImageContent:
		p, _ := media("image", c.MIMEType, c.Data, o)
		return p
	case *mcp.AudioContent:
		// No provider takes audio in a tool result (conduit.ShapeForModel
		// says the same).
		return Part{Kind: PartText, Text: modeltext.Placeholder("audio", c.MIMEType, len(c.Data))}
	case *mcp.ResourceLink:
		return Part{Kind: PartText, Text: jsonv.ValidString(linkText(c))}
	case *mcp.EmbeddedResource:
		rc := c.Resource
		switch {
		case rc == nil:
			return Part{Kind: PartText, Text: modeltext.EmptyResource}
		case rc.Blob != nil:
			uri := jsonv.ValidString(rc.URI)
			p, omitted := media("resource: "+uri, rc.MIMEType, rc.Blob, o)
			if p.Kind == PartText && !omitted {
				p.Text = modeltext.ResourcePlaceholder(uri, rc.MIMEType, len(rc.Blob))
			}
			return p
		default:
			return Part{Kind: PartText, Text: "[resource: " + jsonv.ValidString(rc.URI) + "]\n" + jsonv.ValidString(rc.Text)}
		}
	case nil:
		return Part{Kind: PartText}
	default:
		data, _ := c.MarshalJSON()
		return Part{Kind: PartText, Text: string(data)}
	}
}

// media is an image, or a blob that may be one: the image when the
// provider takes it, a placeholder otherwise; omitted reports a
// placeholder for an image over the provider's limit.
func media(kind, declared string, data []byte, o *RenderOptions) (p Part, omitted bool) {
	mt, ok := conduit.ModelImageType(declared, data)
	if ok && o.Images {
		if why := o.Limit.over(mt, data); why != "" {
			return Part{Kind: PartText, Text: modeltext.Omitted(kind, mt, len(data), why)}, true
		}
		return Part{Kind: PartImage, MediaType: mt, Data: data}, false
	}
	if ok {
		declared = mt
	}
	return Part{Kind: PartText, Text: modeltext.Placeholder(kind, declared, len(data))}, false
}

// linkText is a resource_link as a model sees it.
func linkText(l *mcp.ResourceLink) string {
	name := l.Name
	if name == "" {
		name = l.Title
	}
	s := "[resource]"
	if name != "" {
		s += " " + name
	}
	s += " <" + l.URI + ">"
	if l.MIMEType != "" {
		s += " (" + l.MIMEType + ")"
	}
	return s
}

// plainJSON returns v as a plain decoded JSON value (maps, slices,
// strings, float64, bools), as providers' payloads are: a decoded value is
// used as it is, anything else (a Go struct an after-hook put there, a
// json.RawMessage) goes through JSON.
func plainJSON(v any) any {
	switch v.(type) {
	case map[string]any, []any, string, float64, bool:
		return v
	}
	var data []byte
	switch x := v.(type) {
	case json.RawMessage:
		data = x
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return fmt.Sprint(v)
		}
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return string(data)
	}
	return out
}

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// Text joins the parts' text with newlines; images become placeholders.
func Text(parts []Part) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Kind == PartImage {
			b.WriteString(modeltext.Placeholder("image", p.MediaType, len(p.Data)))
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ErrorText is the text a model sees for a failed call: an *conduit.Error's
// Message, or the error's text, repaired to valid UTF-8; a nil error is
// the no-result text.
func ErrorText(err error) string {
	if err == nil {
		return modeltext.NoResult("")
	}
	var e *conduit.Error
	if errors.As(err, &e) && e.Message != "" {
		return jsonv.ValidString(e.Message)
	}
	if s := err.Error(); s != "" {
		return jsonv.ValidString(s)
	}
	return modeltext.NoResult("")
}
