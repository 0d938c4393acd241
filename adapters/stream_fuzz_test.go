package adapters_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/bedrock"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/internal/sse"
)

// fuzzStream feeds a stream, as bytes, to the driver's stream parser: no
// input may panic, and the response it makes must marshal to JSON and
// read as the provider's, with every call the stream completed in it.
func fuzzStream(f *testing.F, p adapters.Provider, d driver.Provider) {
	for _, seed := range fuzzSeeds(f, p) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := d.(driver.Streamer).Stream()
		r := sse.NewReader(bytes.NewReader(data), 1<<20)
		released := 0
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			step, err := s.Event(driver.Event{Name: ev.Name, Data: ev.Data})
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an error without words")
				}
				break
			}
			for _, c := range step.Calls {
				if c.ID == "" && c.Err == nil && p != adapters.Gemini {
					t.Fatalf("a call released with no id and no error: %+v", c)
				}
			}
			released += len(step.Calls)
		}
		resp := s.Response()
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("the response does not marshal: %v", err)
		}
		if p != adapters.OpenAIResponses { // response.completed's own response is taken as sent
			raws, err := d.Parse(resp)
			if err != nil {
				t.Fatalf("the response made of the stream does not parse: %v", err)
			}
			if len(raws) < released {
				t.Fatalf("%d calls released, %d in the response", released, len(raws))
			}
		}
		_ = s.Open()
	})
}

// fuzzSeeds are the documented streams and made-up ones, whole and cut.
func fuzzSeeds(f *testing.F, p adapters.Provider) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob(filepath.Join("testdata", p.String(), "stream_doc_*"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil && filepath.Ext(file) != ".json" {
			out = append(out, b)
		}
	}
	parts := streamOf(f, p, "Checking. ", weatherCalls...)
	out = append(out, joined(parts), joined(parts[:2]))
	return out
}

func FuzzStreamAnthropic(f *testing.F)  { fuzzStream(f, adapters.Anthropic, anthropic.Driver()) }
func FuzzStreamOpenAIChat(f *testing.F) { fuzzStream(f, adapters.OpenAIChat, openai.ChatDriver()) }
func FuzzStreamOpenAIResponses(f *testing.F) {
	fuzzStream(f, adapters.OpenAIResponses, openai.ResponsesDriver())
}
func FuzzStreamGemini(f *testing.F)  { fuzzStream(f, adapters.Gemini, gemini.Driver()) }
func FuzzStreamBedrock(f *testing.F) { fuzzStream(f, adapters.Bedrock, bedrock.Driver()) }
