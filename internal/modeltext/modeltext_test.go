package modeltext

import "testing"

func TestTexts(t *testing.T) {
	for got, want := range map[string]string{
		CallFailed("s__t"): "The call to s__t failed.",
		NoResult("s__t"):   "The call to s__t produced no result.",
		NoResult(""):       "The call produced no result.",
		Placeholder("audio", "Audio/OGG; codecs=opus", 4):   "[audio: audio/ogg, 4 bytes]",
		Placeholder("image", "", 3):                         "[image: unknown type, 3 bytes]",
		Placeholder("image", "image/\xff", 1):               "[image: image/\uFFFD, 1 bytes]",
		ResourcePlaceholder("file:///a.gz", "", 2048):       "[resource: file:///a.gz, unknown type, 2048 bytes]",
		ResourcePlaceholder("x:\xff", "application/pdf", 1): "[resource: x:\uFFFD, application/pdf, 1 bytes]",
		Omitted("image", "image/png", 7<<20, "why"):         "[image omitted: image/png, 7 MB, why]",
		Size(812):             "812 bytes",
		Size(40 << 10):        "40.0 KB",
		Size(7<<20 + 300<<10): "7.3 MB",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
