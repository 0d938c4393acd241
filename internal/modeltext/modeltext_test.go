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
		CutNotice(Cut{Budget: 25000, KeptTokens: 24990, Tokens: 796000, KeptBytes: 98 << 10, Bytes: 3 << 20, KeptLines: 1204, Lines: 31877}): "[conduit: the result was cut to fit its budget of 25000 tokens: kept the first 1204 of 31877 lines (98.0 KB of 3 MB, about 24990 of 796000 tokens). Ask for less at a time (a narrower query, a smaller range or page), if the tool allows it.]",
		CutNotice(Cut{Budget: 10, Tokens: 50, Bytes: 200, JSON: true, Replaced: true, ReadTool: "conduit__read_result", ResultRef: "r1"}):    "[conduit: the result was cut to fit its budget of 10 tokens: none of it could be kept (200 bytes, about 50 tokens). The whole result is kept: call conduit__read_result with result \"r1\" to read the rest by range, or to find the lines that match a pattern.]",
		Size(812):             "812 bytes",
		Size(40 << 10):        "40.0 KB",
		Size(7<<20 + 300<<10): "7.3 MB",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
