// Tests of a Provider's JSON form, which options and saved histories carry.
package adapters_test

import (
	"encoding/json"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/bedrock"
	"github.com/conduitmcp/conduit/adapters/driver"
)

// TestProviderJSON: a built-in provider round-trips by name, null is none,
// 0.3's numbers still decode, and an outside provider refuses to marshal.
func TestProviderJSON(t *testing.T) {
	type opts struct{ Provider adapters.Provider }
	for _, p := range adapters.Providers() {
		b, err := json.Marshal(opts{p})
		if err != nil {
			t.Fatal(err)
		}
		var back opts
		if err := json.Unmarshal(b, &back); err != nil || back.Provider != p {
			t.Errorf("%s: %s -> %v %v", p, b, back.Provider, err)
		}
	}
	for in, want := range map[string]adapters.Provider{
		`{"Provider":1}`: adapters.Anthropic, `{"Provider":2}`: adapters.OpenAIChat,
		`{"Provider":3}`: adapters.OpenAIResponses, `{"Provider":4}`: adapters.Gemini,
		`{"Provider":null}`: {}, `{"Provider":""}`: {}, `{}`: {},
	} {
		var o opts
		if err := json.Unmarshal([]byte(in), &o); err != nil || o.Provider != want {
			t.Errorf("%s: %v %v, want %v", in, o.Provider, err, want)
		}
	}
	for _, in := range []string{`{"Provider":5}`, `{"Provider":1.5}`, `{"Provider":"cohere"}`, `{"Provider":[]}`} {
		var o opts
		if err := json.Unmarshal([]byte(in), &o); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
	if b, err := json.Marshal(opts{}); err != nil || string(b) != `{"Provider":null}` {
		t.Errorf("zero: %s %v", b, err)
	}
	outside := adapters.NewProvider(outsideDriver{bedrock.Driver()})
	if _, err := json.Marshal(opts{outside}); err == nil {
		t.Error("an outside provider marshalled")
	}
}

// outsideDriver is a driver under a name no built-in has.
type outsideDriver struct{ driver.Provider }

func (outsideDriver) Name() string { return "outside" }
