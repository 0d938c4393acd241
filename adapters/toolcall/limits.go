package toolcall

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/modeltext"
)

// ImageLimit is what a provider accepts of one image in an answer. An
// image over it becomes a placeholder that says why; the rest of the
// result is kept.
type ImageLimit struct {
	// Provider names the provider to the model, in the placeholder:
	// "Anthropic".
	Provider string
	// MaxBytes is the largest image, counted in bytes of its base64 text,
	// which is what a request carries and what Anthropic measures (4/3 of
	// the image's own bytes, so the limit errs on the safe side where a
	// provider counts decoded bytes). Zero or less: no limit.
	MaxBytes int
	// MaxWidth and MaxHeight are the largest dimensions, in pixels, read
	// from a PNG's, JPEG's or GIF's header (a WebP's is not read). Zero:
	// no limit.
	MaxWidth, MaxHeight int
}

// ImageLimit returns the image limit an answer applies: def, a provider's
// documented limit, with o's MaxImageBytes in place of def.MaxBytes when
// set (negative: no byte limit).
func (o *AnswerOptions) ImageLimit(def ImageLimit) ImageLimit {
	if o != nil && o.MaxImageBytes != 0 {
		def.MaxBytes = o.MaxImageBytes
	}
	return def
}

// over returns why an image of these bytes is over l ("" when it is not):
// the reason a placeholder gives.
func (l ImageLimit) over(mediaType string, data []byte) string {
	if l.MaxBytes > 0 {
		if n := base64.StdEncoding.EncodedLen(len(data)); n > l.MaxBytes {
			return fmt.Sprintf("%s in base64, over %s's %s limit per image", modeltext.Size(n), l.Provider, modeltext.Size(l.MaxBytes))
		}
	}
	if l.MaxWidth > 0 || l.MaxHeight > 0 {
		var cfg image.Config
		var err error
		switch mediaType {
		case "image/png":
			cfg, err = png.DecodeConfig(bytes.NewReader(data))
		case "image/jpeg":
			cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
		case "image/gif":
			cfg, err = gif.DecodeConfig(bytes.NewReader(data))
		default:
			err = errors.ErrUnsupported
		}
		if err == nil && ((l.MaxWidth > 0 && cfg.Width > l.MaxWidth) || (l.MaxHeight > 0 && cfg.Height > l.MaxHeight)) {
			return fmt.Sprintf("%dx%d px, over %s's %dx%d px limit per image", cfg.Width, cfg.Height, l.Provider, l.MaxWidth, l.MaxHeight)
		}
	}
	return ""
}

// ErrTooManyCalls is the cause of every call answered with
// [TooManyCallsError]: errors.Is(err, ErrTooManyCalls) tells them apart.
var ErrTooManyCalls = errors.New("too many tool calls in one response")

// TooManyCallsError is the error of a call past the limit of max calls in
// one response of n calls: it is answered with this and not sent. t is
// the tool the call names, nil when the name is not offered. Its kind is
// conduit.KindLimit, like the limits on a call's arguments and result, so
// errors.Is(err, conduit.ErrLimit) holds as well.
func TooManyCallsError(t *conduit.Tool, name string, n, max int) *conduit.Error {
	e := &conduit.Error{Kind: conduit.KindLimit, Err: ErrTooManyCalls,
		Message: fmt.Sprintf("The call to %s was not made: the response has %d tool calls, over the limit of %d in one response, and only the first %d are run. Make at most %d calls at a time.", jsonv.ValidString(name), n, max, max, max)}
	if t != nil {
		e.Server, e.Tool = t.Server, t.Name
	}
	return e
}
