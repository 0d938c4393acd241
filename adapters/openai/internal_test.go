package openai

import "testing"

// An API that is neither Chat nor Responses parses nothing and has no
// driver. Only this package can name one.
func TestUnknownAPI(t *testing.T) {
	if _, err := apiKind(9).parse(`{}`); err == nil {
		t.Error("unknown API")
	}
	if apiKind(9).provider() != nil {
		t.Error("an unknown API has a driver")
	}
}

// The Chat Completions API has no tool search.
func TestChatHasNoToolSearch(t *testing.T) {
	if _, err := chatAPI.searchTools(nil, nil, 0); err != errNoToolSearch {
		t.Errorf("chat: %v", err)
	}
}
