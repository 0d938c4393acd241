package adapters_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

func TestProviderTable(t *testing.T) {
	ps := adapters.Providers()
	var names []string
	for _, p := range ps {
		names = append(names, p.String())
		back, err := adapters.ParseProvider(strings.ToUpper(p.String()))
		if err != nil || back != p {
			t.Errorf("ParseProvider(%s) = %v, %v", p, back, err)
		}
	}
	if !slices.Equal(names, []string{"anthropic", "openai-chat", "openai-responses", "gemini", "bedrock"}) {
		t.Errorf("providers %v", names)
	}
	if _, err := adapters.ParseProvider("claude"); err == nil || !strings.Contains(err.Error(), "anthropic, openai-chat") {
		t.Errorf("ParseProvider(claude): %v", err)
	}
	var bad adapters.Provider
	if bad.String() != "Provider(none)" || bad.Wire().Endpoint != nil || bad.Answer(toolcall.Call{}, nil, nil, nil) != nil {
		t.Error("an invalid provider")
	}
	if _, err := bad.Parse(`{}`); err == nil {
		t.Error("Parse of an invalid provider")
	}
	if _, err := adapters.ExecuteToolCalls(context.Background(), nil, bad, `{}`, nil); err == nil {
		t.Error("ExecuteToolCalls of an invalid provider")
	}
	if _, err := adapters.NewConversation(context.Background(), nil, adapters.Provider{}, nil); err == nil {
		t.Error("NewConversation of an invalid provider")
	}
}
