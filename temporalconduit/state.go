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

// State is a [Conversation]'s state between turns: what
// [ResumeConversation] needs to carry the conversation on in a new run
// of the workflow (continue-as-new), and all a workflow keeps of it. It is
// plain data, encoded by the workflow's data converter like any other
// workflow input: Temporal's history is where it is kept, and a payload
// codec is what encrypts it there.
//
// It holds the parts of an adapters.Conversation's state that a workflow
// needs to read deterministically: the tools offered, each by its digest
// (the same pins.ToolDigest adapters' sealed state records), the
// principal, the taint, and the turns counted; not the sealed bytes,
// which a workflow could not read without a key. A turn never spans
// runs: Execute returns once every call of the turn is answered.
//
// The fields are exported for the data converter; build a State with
// Conversation.State, never by hand. Its version is V: this release writes
// and reads version 1, and later releases add fields only where their
// absence means what it means now.
type State struct {
	V int `json:"v"`
	// ID names the conversation in the claims of its calls: random,
	// recorded in the history, the same across continue-as-new.
	ID    string `json:"id"`
	Offer Offer  `json:"offer"`
	// Taint is the servers whose output has reached the model so far.
	Taint []string `json:"taint,omitempty"`
	// Turns counts the turns executed.
	Turns int `json:"turns"`
}

// Offer is what the model is offered: the tools a listing activity found
// for the conversation's provider, principal and taint, each by its
// definition's digest, not the definitions themselves, which stay out of
// the history. The application's model activity turns it into tool
// definitions with [Activities.Tools]; every activity resolves calls
// against it, so a tool whose definition changed since it was offered is
// never called on the model's understanding of the old one.
type Offer struct {
	// Provider is the provider's name (adapters.Provider.String).
	Provider string `json:"provider"`
	// Principal and Taint are those the tools were listed for.
	Principal string    `json:"principal,omitempty"`
	Taint     []string  `json:"taint,omitempty"`
	Tools     []ToolRef `json:"tools"`
}

// ToolRef names one tool offered: its server, its own name there, the
// name the model calls, and the digest of its definition
// (pins.ToolDigest).
type ToolRef struct {
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Exposed string `json:"exposed"`
	Digest  string `json:"digest"`
}

// ErrInvalidState is the error of ResumeConversation for a State it
// cannot carry on: of another version, or incomplete.
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
