// Package modeltext builds the texts a model reads that conduit writes
// itself, in place of a result or of content it cannot take. Each is
// built here and only here, so that the root package and the adapters,
// which are split only because the adapters import conduit, never word the
// same event two ways.
package modeltext

import (
	"fmt"
	"mime"
	"strings"

	"github.com/conduitmcp/conduit/internal/jsonv"
)

// CallFailed is the text of a call that failed inside conduit or the
// program's own code (a panic, or an error that is not a conduit.Error):
// what went wrong is for the program's logs, not for the model. name is
// the exposed name the model called.
func CallFailed(name string) string {
	return "The call to " + name + " failed."
}

// NoResult is the text of a call answered with neither a result nor an
// error, which only faulty code produces (a server's empty result, a
// Source's or a local tool's nil result). name is the exposed name, or
// empty when the answer no longer knows it.
func NoResult(name string) string {
	if name == "" {
		return "The call produced no result."
	}
	return "The call to " + name + " produced no result."
}

// EmptyError stands for an isError result with no content: providers
// refuse an empty error (Anthropic answers HTTP 400), and a model learns
// nothing from one.
const EmptyError = "The tool reported an error without details."

// Placeholder is the text a model reads in place of content it cannot
// take: "[image: image/svg+xml, 1024 bytes]". kind is "image" or "audio";
// mediaType is as the server declared it (its parameters are dropped);
// size is the decoded size. The text is valid UTF-8 whatever the server
// sent.
func Placeholder(kind, mediaType string, size int) string {
	return jsonv.ValidString(fmt.Sprintf("[%s: %s, %d bytes]", kind, orUnknown(mediaType), size))
}

// ResourcePlaceholder is the text in place of an embedded resource's blob
// that a model cannot take: "[resource: file:///a.gz, application/gzip,
// 2048 bytes]".
func ResourcePlaceholder(uri, mediaType string, size int) string {
	return jsonv.ValidString(fmt.Sprintf("[resource: %s, %s, %d bytes]", uri, orUnknown(mediaType), size))
}

// EmptyResource is the text of an embedded resource without contents.
const EmptyResource = "[resource]"

// Omitted is the placeholder of an image over a provider's limit, kind
// being "image" or "resource: <uri>": "[image omitted: image/png, 7.3 MB,
// 9.7 MB in base64, over Anthropic's 5 MB limit per image]".
func Omitted(kind, mediaType string, size int, reason string) string {
	return jsonv.ValidString(fmt.Sprintf("[%s omitted: %s, %s, %s]", kind, orUnknown(mediaType), Size(size), reason))
}

// Cut describes what a result budget kept of a result, for the notice
// the model reads after it (see [CutNotice]).
type Cut struct {
	Budget              int    // the budget, in tokens
	KeptTokens, Tokens  int    // estimated tokens kept, and of the whole
	KeptBytes, Bytes    int    // bytes of text kept, and of the whole
	KeptLines, Lines    int    // lines of text kept, and of the whole; 0 when not counted
	JSON                bool   // cut as JSON, its structure kept valid
	Replaced            bool   // nothing could be kept
	ReadTool, ResultRef string // conduit's tool that reads the rest, and this result's name there; "" when off
}

// CutNotice is the text a model reads after a result cut to its budget:
// "[conduit: the result was cut to fit its budget of 25000 tokens: kept
// the first 1204 of 31877 lines (98.1 KB of 3.0 MB, about 24990 of 796000
// tokens). Ask for less at a time (a narrower query, a smaller range or
// page), if the tool allows it.]"
func CutNotice(c Cut) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[conduit: the result was cut to fit its budget of %d tokens: ", c.Budget)
	switch {
	case c.Replaced:
		fmt.Fprintf(&b, "none of it could be kept (%s, about %d tokens).", Size(c.Bytes), c.Tokens)
	case c.Lines > 0:
		fmt.Fprintf(&b, "kept the first %d of %d lines (%s of %s, about %d of %d tokens).", c.KeptLines, c.Lines, Size(c.KeptBytes), Size(c.Bytes), c.KeptTokens, c.Tokens)
	default:
		fmt.Fprintf(&b, "kept the first %s of %s (about %d of %d tokens).", Size(c.KeptBytes), Size(c.Bytes), c.KeptTokens, c.Tokens)
	}
	if c.JSON && !c.Replaced {
		b.WriteString(" The JSON kept is valid: the arrays and objects that did not fit whole were closed where it was cut.")
	}
	if c.ReadTool != "" {
		fmt.Fprintf(&b, " The whole result is kept: call %s with result %q to read the rest by range, or to find the lines that match a pattern.", c.ReadTool, c.ResultRef)
	} else {
		b.WriteString(" Ask for less at a time (a narrower query, a smaller range or page), if the tool allows it.")
	}
	b.WriteByte(']')
	return jsonv.ValidString(b.String())
}

// Size is a byte count as a model reads it: "812 bytes", "40.0 KB",
// "7.3 MB" (in units of 1024, as Anthropic states its limits).
func Size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

func orUnknown(mediaType string) string {
	if mt := BaseType(mediaType); mt != "" {
		return mt
	}
	return "unknown type"
}

// BaseType returns a media type without its parameters, lower-cased.
func BaseType(t string) string {
	if mt, _, err := mime.ParseMediaType(t); err == nil {
		return mt
	}
	return strings.ToLower(strings.TrimSpace(t))
}
