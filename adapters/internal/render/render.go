// Package render turns a tool's result into provider-neutral parts. The
// parts are text and images, with placeholders for the rest. It also
// keeps the answers' shared helpers. It serves the provider packages under
// adapters/ alone. Users build answers through a provider's answer
// function, so none of this is API.
package render

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/modelresult"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
	// MediaType and Data are those of a PartImage. Its bytes are JPEG, PNG,
	// GIF or WebP. MediaType is the type the bytes show.
	MediaType string
	Data      []byte
}

// Rendered is a result in provider-neutral form.
type Rendered struct {
	Parts []Part
	// Structured is the structuredContent value standing for the whole
	// result. It is set only when RenderOptions.StructuredValue asked for
	// it and the mode chose it (Gemini's response.output).
	Structured any
	IsError    bool
}

// RenderOptions are the options of Render.
type RenderOptions struct {
	// Mode is the structured mode, already resolved from the default.
	Mode toolcall.Structured
	// Images keeps accepted images as PartImage; otherwise they become
	// placeholders.
	Images bool
	// StructuredValue returns a chosen structuredContent as a value rather
	// than as JSON text.
	StructuredValue bool
	// Limit is the provider's limit on one image, with Images. An image
	// over it becomes a placeholder that says why.
	Limit ImageLimit
}

// Render turns a result's content into parts. Content a model cannot take
// inline becomes text:
//
//   - Images other than JPEG, PNG, GIF and WebP become placeholders.
//   - So do every audio clip and embedded blobs that are not such images.
//     This holds even when the result was not shaped.
//   - A resource_link becomes "[resource] name <uri> (mime)". It is never
//     fetched.
//   - An embedded text resource becomes its text under a
//     "[resource: uri]" header.
//   - An image over o.Limit becomes a placeholder that says why.
//
// Every string of the rendering is valid UTF-8. Text, resource text and
// URIs, media types and structuredContent's strings are repaired before
// they reach JSON. Invalid sequences become U+FFFD. This costs a scan when
// they are already valid. res is not modified. o may be nil for the
// defaults.
func Render(res *mcp.CallToolResult, o *RenderOptions) Rendered {
	if o == nil {
		o = &RenderOptions{}
	}
	r := Rendered{IsError: res.IsError}
	sc := res.StructuredContent
	useSC := false
	switch o.Mode {
	case toolcall.StructuredAuto, toolcall.StructuredDefault:
		useSC = sc != nil && len(res.Content) == 0
	case toolcall.StructuredPrefer:
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
	if sc != nil && (useSC || o.Mode == toolcall.StructuredAppend) {
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
		// No provider takes audio in a tool result (adapters.ShapeForModel
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

// media is an image, or a blob that may be one. It gives the image when
// the provider takes it, a placeholder otherwise. omitted reports a
// placeholder for an image over the provider's limit.
func media(kind, declared string, data []byte, o *RenderOptions) (p Part, omitted bool) {
	mt, ok := modelresult.ImageType(declared, data)
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

// plainJSON returns v as a plain decoded JSON value, as providers'
// payloads are: maps, slices, strings, float64, bools. A decoded value is
// used as it is. Anything else goes through JSON. That may be a Go struct
// an after-hook put there, or a json.RawMessage.
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

// ErrorText is the text a model sees for a failed call. It is an
// *conduit.Error's Message, or the error's text, repaired to valid UTF-8.
// A nil error gives the no-result text.
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

// ImageLimit is what a provider accepts of one image in an answer. An
// image over it becomes a placeholder that says why. The rest of the
// result is kept.
type ImageLimit struct {
	// Provider names the provider to the model, in the placeholder:
	// "Anthropic".
	Provider string
	// MaxBytes is the largest image, counted in bytes of its base64 text.
	// That is what a request carries and what Anthropic measures. It is 4/3
	// of the image's own bytes. So the limit errs on the safe side where a
	// provider counts decoded bytes. Zero or less: no limit.
	MaxBytes int
	// MaxWidth and MaxHeight are the largest dimensions, in pixels. They
	// are read from a PNG's, JPEG's or GIF's header. A WebP's is not read.
	// Zero: no limit.
	MaxWidth, MaxHeight int
}

// Limit returns the image limit an answer applies. That is def, a
// provider's documented limit. o's MaxImageBytes, when set, takes the
// place of def.MaxBytes. Negative means no byte limit.
func Limit(o *toolcall.AnswerOptions, def ImageLimit) ImageLimit {
	if o != nil && o.MaxImageBytes != 0 {
		def.MaxBytes = o.MaxImageBytes
	}
	return def
}

// over returns why an image of these bytes is over l ("" when it is not).
// A placeholder gives this reason.
func (l ImageLimit) over(mediaType string, data []byte) string {
	if l.MaxBytes > 0 {
		if n := base64.StdEncoding.EncodedLen(len(data)); n > l.MaxBytes {
			return fmt.Sprintf("%s in base64, over %s's %s limit per image", modeltext.Size(n), l.Provider, modeltext.Size(l.MaxBytes))
		}
	}
	if l.MaxWidth > 0 || l.MaxHeight > 0 {
		w, h := tokens.ImageSize(mediaType, data)
		if w > 0 && ((l.MaxWidth > 0 && w > l.MaxWidth) || (l.MaxHeight > 0 && h > l.MaxHeight)) {
			return fmt.Sprintf("%dx%d px, over %s's %dx%d px limit per image", w, h, l.Provider, l.MaxWidth, l.MaxHeight)
		}
	}
	return ""
}

// DecodedArgs returns arguments as a decoded response holds them, in the
// form [Raw.Args] takes. present reports that the call had the field at
// all. An absent field is no arguments. JSON null and a JSON string are
// JSON text. So resolution refuses them as not an object. It does not
// take null for no arguments, or a string for JSON text.
func DecodedArgs(v any, present bool) any {
	switch a := v.(type) {
	case nil:
		if present {
			return json.RawMessage("null")
		}
		return nil
	case string:
		data, _ := json.Marshal(a)
		return json.RawMessage(data)
	}
	return v
}

// LastOf returns the list under field of a conversation's last entry, or
// nil. The entry must have the role role. Anthropic (content) and Gemini
// (parts) put the answers of a turn there.
func LastOf(conversation []any, role, field string) []any {
	if len(conversation) == 0 {
		return nil
	}
	last := jsonv.Object(conversation[len(conversation)-1])
	if last["role"] != role {
		return nil
	}
	return jsonv.List(last[field])
}
