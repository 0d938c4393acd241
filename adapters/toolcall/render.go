package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
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
}

// Render turns a result's content into parts. Content a model cannot take
// inline becomes text: images other than JPEG, PNG, GIF and WebP, every
// audio clip, and embedded blobs that are not such images become
// placeholders, even when the result was not shaped; a resource_link
// becomes "[resource] name <uri> (mime)" and is never fetched; an embedded
// text resource becomes its text under a "[resource: uri]" header.
func Render(res *mcp.CallToolResult, o RenderOptions) Rendered {
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
		r.Structured = plainJSON(sc)
		return r
	}
	if !useSC {
		r.Parts = make([]Part, 0, len(res.Content)+1)
		for _, c := range res.Content {
			r.Parts = append(r.Parts, part(c, o.Images))
		}
	}
	if sc != nil && (useSC || o.Mode == StructuredAppend) {
		r.Parts = append(r.Parts, Part{Kind: PartText, Text: jsonText(sc)})
	}
	return r
}

func part(c mcp.Content, images bool) Part {
	switch c := c.(type) {
	case *mcp.TextContent:
		return Part{Kind: PartText, Text: c.Text}
	case *mcp.ImageContent:
		return image("image", c.MIMEType, c.Data, images)
	case *mcp.AudioContent:
		return Part{Kind: PartText, Text: conduit.Placeholder("audio", c.MIMEType, len(c.Data))}
	case *mcp.ResourceLink:
		return Part{Kind: PartText, Text: linkText(c)}
	case *mcp.EmbeddedResource:
		rc := c.Resource
		switch {
		case rc == nil:
			return Part{Kind: PartText, Text: "[resource]"}
		case rc.Blob != nil:
			p := image("resource", rc.MIMEType, rc.Blob, images)
			if p.Kind == PartText {
				p.Text = fmt.Sprintf("[resource: %s, %s, %d bytes]", rc.URI, orUnknown(rc.MIMEType), len(rc.Blob))
			}
			return p
		default:
			return Part{Kind: PartText, Text: "[resource: " + rc.URI + "]\n" + rc.Text}
		}
	case nil:
		return Part{Kind: PartText}
	default:
		data, _ := c.MarshalJSON()
		return Part{Kind: PartText, Text: string(data)}
	}
}

func image(kind, declared string, data []byte, images bool) Part {
	mt, ok := conduit.ModelImageType(declared, data)
	if ok && images {
		return Part{Kind: PartImage, MediaType: mt, Data: data}
	}
	if ok {
		declared = mt
	}
	return Part{Kind: PartText, Text: conduit.Placeholder(kind, declared, len(data))}
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

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
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
			b.WriteString(conduit.Placeholder("image", p.MediaType, len(p.Data)))
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ErrorText is the text a model sees for a failed call: an *conduit.Error's
// Message, or the error's text; a nil error is [NoResult].
func ErrorText(err error) string {
	if err == nil {
		return NoResult
	}
	var e *conduit.Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	if s := err.Error(); s != "" {
		return s
	}
	return NoResult
}

// Texts a model sees where there would otherwise be nothing.
const (
	// EmptyError stands for an isError result with no content: providers
	// refuse an empty error (Anthropic answers HTTP 400), and a model
	// learns nothing from one.
	EmptyError = "The tool reported an error without details."
	// NoResult stands for a call answered with neither a result nor an
	// error, which only a faulty Source produces.
	NoResult = "The call produced no result."
)
