package tokens

import (
	"bytes"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
)

// The providers' documented rules for the tokens of one image of width w
// and height h pixels. A size that is not known (w or h not positive)
// counts as the most one image can cost under the rule.

// AnthropicImage is Anthropic's rule, from
// https://platform.claude.com/docs/en/build-with-claude/vision ("Evaluate
// image size", "Calculate image costs"): tokens = (width × height) / 750,
// after an image whose long edge is over 1568 px, or that would be over
// about 1,600 tokens, is scaled down, keeping its aspect ratio. So one
// image costs at most about 1,600 tokens.
func AnthropicImage(w, h int) int {
	const maxTokens, maxEdge = 1600, 1568
	if w <= 0 || h <= 0 {
		return maxTokens
	}
	fw, fh := float64(w), float64(h)
	if long := max(fw, fh); long > maxEdge {
		fw, fh = fw*maxEdge/long, fh*maxEdge/long
	}
	return min(maxTokens, ceilDiv(int(fw)*int(fh), 750))
}

// OpenAIImage is OpenAI's rule for an image sent with detail "auto" or
// "high" (conduit's answers send "auto", under which the model may choose
// high), from https://platform.openai.com/docs/guides/images-vision
// ("Calculating costs"): the image is scaled to fit 2048×2048, then so
// that its shortest side is 768 px; each 512 px tile costs 170 tokens, and
// 85 are added. The models that count 32 px patches instead (GPT-4.1 mini
// and nano, o4-mini) cost up to 1,536 patches; the larger of the two rules
// is taken, at one token a patch.
func OpenAIImage(w, h int) int {
	if w <= 0 || h <= 0 {
		w, h = 768, 2048 // the most tiles: 2×4
	}
	return max(openAITiles(w, h), min(1536, ceilDiv(w, 32)*ceilDiv(h, 32)))
}

// openAITiles is the tile rule alone.
func openAITiles(w, h int) int {
	fw, fh := float64(w), float64(h)
	if long := max(fw, fh); long > 2048 {
		fw, fh = fw*2048/long, fh*2048/long
	}
	if short := min(fw, fh); short > 768 {
		fw, fh = fw*768/short, fh*768/short
	}
	return 85 + 170*ceilDiv(int(fw+0.5), 512)*ceilDiv(int(fh+0.5), 512)
}

// GeminiImage is Gemini's rule, from
// https://ai.google.dev/gemini-api/docs/tokens ("Multimodal tokens"): 258
// tokens for an image whose sides are both at most 384 px; a larger one is
// cropped and scaled into tiles of 768×768 px, 258 tokens each. (conduit's
// Gemini answers carry no images: they become text placeholders.)
func GeminiImage(w, h int) int {
	if w <= 0 || h <= 0 {
		w, h = 1536, 1536
	}
	if w <= 384 && h <= 384 {
		return 258
	}
	return 258 * ceilDiv(w, 768) * ceilDiv(h, 768)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ImageSize returns an image's width and height in pixels, read from a
// PNG's, JPEG's or GIF's header; 0, 0 when they cannot be read (a WebP's
// are not). It is the one place that reads an image's dimensions.
func ImageSize(mediaType string, data []byte) (w, h int) {
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
		return 0, 0
	}
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}

// AnyImage is the largest of the rules above: an image's cost when the
// model that reads it is unknown, or counts images its own way.
func AnyImage(w, h int) int {
	return max(AnthropicImage(w, h), OpenAIImage(w, h), GeminiImage(w, h))
}
