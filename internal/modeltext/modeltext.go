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
