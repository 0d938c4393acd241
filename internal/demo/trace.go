package demo

import (
	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
)

// withTrace is t, when set, with the demo's own Decided called first.
func withTrace(t, own *conduit.Trace) *conduit.Trace {
	if t == nil {
		return own
	}
	both := *t
	if prev := t.Decided; prev != nil {
		both.Decided = func(di conduit.StepInfo) { own.Decided(di); prev(di) }
	} else {
		both.Decided = own.Decided
	}
	return &both
}

// withListingTrace is t, when set, with the demo's own StrictFallback
// called first.
func withListingTrace(t, own *adapters.Trace) *adapters.Trace {
	if t == nil {
		return own
	}
	both := *t
	if prev := t.StrictFallback; prev != nil {
		both.StrictFallback = func(f adapters.StrictFallbackInfo) { own.StrictFallback(f); prev(f) }
	} else {
		both.StrictFallback = own.StrictFallback
	}
	return &both
}
