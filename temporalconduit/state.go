// The conversation's state as the workflow keeps it: plain data in the
// workflow's history, carried across continue-as-new.

package temporalconduit

import (
	"errors"
	"fmt"
	"slices"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/digest"
)

// stateVersion is the version of State this release writes, and the only
// one it reads (State.V).
const stateVersion = 1

// State is a [Conversation]'s state between turns. [ResumeConversation]
// needs it to carry the conversation on in a new run of the workflow
// (continue-as-new). It is all a workflow keeps of the conversation. It is
// plain data, encoded by the workflow's data converter like any other
// workflow input. Temporal's history is where it is kept. A payload codec is
// what encrypts it there.
//
// It holds the parts of an adapters.Conversation's state that a workflow
// needs to read deterministically:
//
//   - the tools offered, each by its digest (the same pins.ToolDigest
//     adapters' sealed state records);
//   - the principal;
//   - the taint;
//   - the turns counted.
//
// It does not hold the sealed bytes. A workflow could not read them without
// a key. A turn never spans runs: Execute returns once every call of the
// turn is answered.
//
// The fields are exported for the data converter. Build a State with
// Conversation.State, never by hand. Its version is V. This release writes
// and reads version 1. Later releases add fields only where their absence
// means what it means now.
type State struct {
	V int `json:"v"`
	// ID names the conversation in the claims of its calls. It is random,
	// recorded in the history, and the same across continue-as-new.
	ID    string `json:"id"`
	Offer Offer  `json:"offer"`
	// Taint is the servers whose output has reached the model so far.
	Taint []string `json:"taint,omitempty"`
	// Turns counts the turns executed.
	Turns int `json:"turns"`
}

// Offer is what the model is offered: the tools a listing activity found for
// the conversation's provider, principal and taint. Each is named by its
// definition's digest. The definitions themselves stay out of the history.
// The application's model activity turns the offer into tool definitions
// with [Activities.Tools]. Every activity resolves calls against it. So a
// tool whose definition changed since it was offered is never called. The
// model would be calling it on its understanding of the old one.
type Offer struct {
	// Provider is the provider's name (adapters.Provider.String).
	Provider string `json:"provider"`
	// Principal and Taint are those the tools were listed for.
	Principal string    `json:"principal,omitempty"`
	Taint     []string  `json:"taint,omitempty"`
	Tools     []ToolRef `json:"tools"`
}

// ToolRef names one tool offered. It holds its server, its own name there,
// the name the model calls, and the digest of its definition
// (pins.ToolDigest).
type ToolRef struct {
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Exposed string `json:"exposed"`
	Digest  string `json:"digest"`
}

// ErrInvalidState is the error of ResumeConversation for a State it cannot
// carry on. Such a State is of another version, or incomplete.
var ErrInvalidState = errors.New("temporalconduit: invalid conversation state")

// check reports what makes st unusable.
func (st *State) check() error {
	if st.V != stateVersion {
		return fmt.Errorf("%w: version %d; this release reads version %d", ErrInvalidState, st.V, stateVersion)
	}
	if st.ID == "" || st.Turns < 0 {
		return fmt.Errorf("%w: no id, or negative turns", ErrInvalidState)
	}
	if err := st.Offer.check(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	return nil
}

// provider is the offer's provider.
func (o *Offer) provider() (adapters.Provider, error) {
	return adapters.ParseProvider(o.Provider)
}

// check reports what makes o unusable.
func (o *Offer) check() error {
	if _, err := o.provider(); err != nil {
		return err
	}
	exposed := make(map[string]bool, len(o.Tools))
	for _, t := range o.Tools {
		if t.Server == "" || t.Tool == "" || t.Exposed == "" || exposed[t.Exposed] {
			return fmt.Errorf("tool %q: incomplete or repeated", t.Exposed)
		}
		if err := digest.Check(t.Digest); err != nil {
			return fmt.Errorf("tool %q: %v", t.Exposed, err)
		}
		exposed[t.Exposed] = true
	}
	return nil
}

// clone is a deep copy of st.
func (st State) clone() State {
	st.Taint = slices.Clone(st.Taint)
	st.Offer.Taint = slices.Clone(st.Offer.Taint)
	st.Offer.Tools = slices.Clone(st.Offer.Tools)
	return st
}
