package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/internal/seal"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Conversation's state, as bytes that leave the process and come back
// to another one. The bytes may wait in a database or a browser. They say
// what the conversation offers, for whom, and its taint. They hold the
// turn that waits for decisions.
//
// # The format
//
// The state is a JSON document (stateV1 below), sealed by internal/seal
// under the application's keys. The seal encrypts and authenticates with
// AES-256-GCM. An id names the key, so that keys can be rotated. The seal
// has an expiry. Whoever holds the state without the key reads nothing of
// it: neither the calls' arguments nor their answers. Nor can they change
// a byte of it. An altered, truncated or foreign state is refused before
// anything is listed or sent. The error matches ErrInvalidState, and says
// why.
//
// # Versions
//
// The seal has a version. This release writes version 2 (encrypted). It
// reads version 1 too (signed only), until 0.5.
//
// The document carries its version, "v". This release writes version 1
// and reads version 1 only. The rules for later releases:
//
//   - A field is added only when its absence means what a state without
//     it meant. Examples are an empty list or a false flag. So a release
//     reads every earlier state of the same version.
//   - A release refuses a document with a field it does not know, such as
//     a state written by a later release. It does not drop what it does
//     not understand.
//   - A change that an old state cannot be read under makes a new version.
//     An example is a field whose meaning changes.
//   - The release that writes version n+1 still reads version n, by
//     converting it when it is read. It does so for as long as
//     DefaultStateTTL allows states of version n to live.
//
// To add a field:
//
//   - add it to stateV1 (or the struct it belongs to) with omitempty;
//   - fill it in Conversation.snapshot;
//   - read it back in ResumeConversation, its zero value meaning "as before";
//   - add a case to TestStateVersionOne's documents.

// DefaultStateTTL is StateOptions.TTL's default. A saved state can be
// resumed for 30 days after it was saved.
const DefaultStateTTL = 30 * 24 * time.Hour

// stateVersion is the version of the state this release writes. It is
// the only one it reads.
const stateVersion = 1

// statePurpose separates the keys of saved conversations from those of
// every other sealed value. seal.New derives a key per purpose.
const statePurpose = "adapters.Conversation state"

// Errors of saved state, for errors.Is.
var (
	// ErrNoStateKey is the error of State and ResumeConversation without
	// StateOptions.Keys.
	ErrNoStateKey = errors.New("adapters: no key for the conversation's state (StateOptions.Keys)")
	// ErrInvalidState is the error of a state that is not authentic. It
	// was not sealed by one of the keys, or it was altered or truncated.
	// Or it is of a version this release does not read. Nothing is listed
	// or sent. The errors below say which, and each matches
	// ErrInvalidState.
	ErrInvalidState = errors.New("adapters: the conversation state is not authentic")
	// ErrStateOtherKey is the error of a state sealed under a key not in
	// StateOptions.Keys. The key is another application's, or one rotated
	// out.
	ErrStateOtherKey = fmt.Errorf("%w: it was sealed under another key than StateOptions.Keys", ErrInvalidState)
	// ErrStateAltered is the error of a state that fails authentication.
	// It was changed.
	ErrStateAltered = fmt.Errorf("%w: it was altered", ErrInvalidState)
	// ErrStateTruncated is the error of a state cut short.
	ErrStateTruncated = fmt.Errorf("%w: it is truncated", ErrInvalidState)
	// ErrStateMalformed is the error of bytes that are not a saved state
	// at all. Examples are bad base64, or a seal version this release does
	// not read.
	ErrStateMalformed = fmt.Errorf("%w: it is not a saved state", ErrInvalidState)
	// ErrStateExpired is the error of an authentic state older than its
	// StateOptions.TTL.
	ErrStateExpired = errors.New("adapters: the conversation state has expired")
	// ErrTurnPending is the error of Execute while the last turn has
	// pending calls. Decide them first (Resume).
	ErrTurnPending = errors.New("adapters: the conversation's last turn has pending calls; decide them with Resume first")
	// ErrNothingPending is the error of Resume when no call is pending.
	ErrNothingPending = errors.New("adapters: no call of the conversation is pending")
)

// StateOptions say how a Conversation's state is saved and resumed. The
// zero value has no key. A Conversation can still defer and resume calls
// within its process, but cannot save its state.
type StateOptions struct {
	// Keys encrypt and authenticate the saved state. The cipher is
	// AES-256-GCM, under a key derived from each. Each is at least 32
	// bytes of random secret. It is not a password: it is not stretched.
	// The first key seals, and every one opens. To rotate, put a new key
	// first. Keep the old one after it until the states it sealed have
	// expired (TTL).
	Keys [][]byte
	// Claims keep every decided call of a resumed turn from being sent
	// twice. The first Resume that decides a call claims it and records
	// its answer. Any other Resume of the same state reads that answer.
	// That is the same saved bytes resumed twice, in sequence or at once.
	// While the first has recorded none, the other is answered that the
	// call was decided elsewhere. Its outcome is unknown: the first may be
	// running, or it died. The other never sends the call.
	//
	// Nil means the source's store (conduit.Options.Store of the Hub or
	// Client). Every process that resumes a conversation's state must
	// share it:
	//
	//   - store/sqlitestore's holds across the processes of one machine
	//     and its restarts;
	//   - store/redisstore's holds across machines;
	//   - a store.NewMemory() holds within its process only. Every Resume
	//     over it sees the others'. It does not see another process's,
	//     nor this one's after a restart. Give it explicitly to accept
	//     that.
	//
	// With no store given, here or as the source's Options.Store:
	//
	//   - ResumeConversation of a state with pending calls fails with
	//     ErrNoStore;
	//   - a Conversation that was never saved keeps its claims in the
	//     source's memory. A Source of one's own without a Store() method
	//     leaves them in the Conversation's own memory.
	Claims store.Claims
	// TTL is how long a saved state can be resumed after it was saved
	// (default DefaultStateTTL). The claims of the calls a Resume decides
	// are kept as long. So no state that could still be resumed finds a
	// claim of its calls forgotten.
	TTL time.Duration
}

// stateConfig is StateOptions made ready.
type stateConfig struct {
	sealer *seal.Sealer // nil without keys
	claims store.Claims
	// given says claims were chosen (StateOptions.Claims, the source's
	// Options.Store), not made for want of one.
	given bool
	ttl   time.Duration
}

// storer is a Source that keeps a store.Store, as a Hub and a Client do.
type storer interface{ Store() store.Store }

// storeGiver tells whether a source's store was given, as a Hub and a
// Client do. A Source without it is taken to have chosen its store.
type storeGiver interface{ StoreGiven() bool }

// config makes o ready for a Conversation over src. src is nil for
// reading a state only.
func (o *StateOptions) config(src conduit.Source) (stateConfig, error) {
	sc := stateConfig{claims: o.Claims, ttl: o.TTL, given: o.Claims != nil}
	if sc.claims == nil && src != nil {
		if s, ok := src.(storer); ok {
			sc.claims = s.Store()
			g, ok := src.(storeGiver)
			sc.given = !ok || g.StoreGiven()
		} else {
			sc.claims = store.NewMemory()
		}
	}
	if sc.ttl == 0 {
		sc.ttl = DefaultStateTTL
	}
	if sc.ttl < 0 {
		return sc, fmt.Errorf("adapters: StateOptions.TTL is negative (%v)", o.TTL)
	}
	if len(o.Keys) > 0 {
		var err error
		if sc.sealer, err = seal.New(statePurpose, o.Keys...); err != nil {
			return sc, fmt.Errorf("adapters: StateOptions.Keys: %w", err)
		}
	}
	return sc, nil
}

// State returns the conversation's state, sealed with the first of
// StateOptions.Keys. ResumeConversation needs it to carry the
// conversation on in another process, or in this one later. It records:
//
//   - the tools offered, each by its server, name, exposed name and the
//     digest of its definition;
//   - strict mode's null paths;
//   - the principal and the taint;
//   - the tools conduit's search revealed;
//   - the last turn while calls of it are pending. It comes with the
//     answers already produced and the pending calls.
//
// It reflects the turns whose Execute or Resume has returned.
//
// The bytes are text, safe in a cookie or a URL. They are encrypted and
// authenticated. Without the key they show nothing of the calls'
// arguments and answers but their length. Nor can they be changed.
// Without keys State fails with ErrNoStateKey.
//
// The seal is versioned. This release seals in version 2 (AES-256-GCM).
// It opens version 1 (HMAC-signed only) too, until 0.5.
//
// The document is versioned too. This release writes version 1 and reads
// version 1 only. Later releases read every state of the version they
// write. A field is added only where its absence means what it meant
// before. A release that moves to a new version still reads the one
// before. It does so for as long as DefaultStateTTL lets its states live.
// A state written by a later release, with fields this one does not
// know, is refused (ErrInvalidState). It is not read in part.
func (c *Conversation) State() ([]byte, error) {
	if c.state.sealer == nil {
		return nil, ErrNoStateKey
	}
	data, err := json.Marshal(c.snapshot())
	if err != nil {
		return nil, fmt.Errorf("adapters: the conversation's state: %w", err)
	}
	return []byte(c.state.sealer.Seal(data, time.Now().Add(c.state.ttl))), nil
}

// MarshalBinary is State, for encoding.BinaryMarshaler.
func (c *Conversation) MarshalBinary() ([]byte, error) { return c.State() }

// MarshalText is State, for encoding.TextMarshaler. So json.Marshal of a
// Conversation is its state, as a JSON string. Without keys it is an
// error, rather than an empty object.
func (c *Conversation) MarshalText() ([]byte, error) { return c.State() }

// stateV1 is the document of a state of version 1.
type stateV1 struct {
	V        int    `json:"v"`
	ID       string `json:"id"`
	Provider string `json:"provider"`
	// Principal is whom the conversation is for. ListTaint is the taint
	// its tools were listed with. Taint is the taint now.
	Principal string   `json:"principal,omitempty"`
	ListTaint []string `json:"list_taint,omitempty"`
	Taint     []string `json:"taint,omitempty"`
	// Tools are the tool set the conversation offers, or searches, in
	// order.
	Tools []toolRef `json:"tools"`
	// Revealed are the tools conduit's search revealed, in order.
	Revealed  []string                     `json:"revealed,omitempty"`
	NullPaths map[string][]driver.NullPath `json:"null_paths,omitempty"`
	// Turns counts the turns executed. Turn is the last one while calls
	// of it are pending.
	Turns int     `json:"turns"`
	Turn  *turnV1 `json:"turn,omitempty"`
}

// toolRef names one tool and the definition it had.
type toolRef struct {
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Exposed string `json:"exposed"`
	Digest  string `json:"digest"`
}

// turnV1 is a turn whose calls are not all answered.
type turnV1 struct {
	N      int      `json:"n"`
	Key    string   `json:"key,omitempty"`   // names its calls' claims (absent: by N alone)
	Taint  []string `json:"taint,omitempty"` // the taint its calls ran with
	Halted bool     `json:"halted,omitempty"`
	Calls  []callV1 `json:"calls"` // every call of the response, in order
}

// callV1 is one call of a turn: answered (Answer), or pending.
type callV1 struct {
	ID      string         `json:"id,omitempty"`
	Name    string         `json:"name,omitempty"`
	Server  string         `json:"server,omitempty"`
	Tool    string         `json:"tool,omitempty"`
	Answer  map[string]any `json:"answer,omitempty"`
	Err     *errV1         `json:"err,omitempty"`
	Reached bool           `json:"reached,omitempty"`
	// Budget is what the result budget did to Answer. Absent, it did
	// nothing, and the answer counts for nothing in the turn's budget.
	// States from before the result budget have none.
	Budget  *budgetV1  `json:"budget,omitempty"`
	Pending *pendingV1 `json:"pending,omitempty"`
	// Nested, for an answered run_code call, are the servers its code
	// read. The answer carries their taint.
	Nested []string `json:"nested,omitempty"`
}

// budgetV1 is what the result budget did to an answer
// (toolcall.Budgeted). It holds:
//
//   - its budget;
//   - the tokens of the whole result and of what was kept;
//   - whether it was cut;
//   - the read tool's reference to the whole;
//   - its demand on the turn's budget, for the calls resumed.
type budgetV1 struct {
	Budget int    `json:"budget,omitempty"`
	Tokens int    `json:"tokens,omitempty"`
	Kept   int    `json:"kept,omitempty"`
	Cut    bool   `json:"cut,omitempty"`
	Ref    string `json:"ref,omitempty"`
	Demand int    `json:"demand,omitempty"`
}

// budgetDocument is b and demand as a state records them. It is nil for
// nothing.
func budgetDocument(b toolcall.Budgeted, demand int) *budgetV1 {
	if b == (toolcall.Budgeted{}) && demand == 0 {
		return nil
	}
	return &budgetV1{Budget: b.Budget, Tokens: b.Tokens, Kept: b.Kept, Cut: b.Cut, Ref: b.Ref, Demand: demand}
}

// demand is the demand b records (nil: none).
func (b *budgetV1) demand() int {
	if b == nil {
		return 0
	}
	return b.Demand
}

// budgeted is the toolcall.Budgeted b records (nil: the zero value).
func (b *budgetV1) budgeted() toolcall.Budgeted {
	if b == nil {
		return toolcall.Budgeted{}
	}
	return toolcall.Budgeted{Budget: b.Budget, Tokens: b.Tokens, Kept: b.Kept, Cut: b.Cut, Ref: b.Ref}
}

// check reports what makes b unusable.
func (b *budgetV1) check() error {
	if b != nil && (b.Budget < 0 || b.Tokens < 0 || b.Kept < 0 || b.Demand < 0) {
		return errors.New("a negative budget")
	}
	return nil
}

// errV1 is a call's failure, as the model was told of it.
type errV1 struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Halt    bool   `json:"halt,omitempty"`
}

// pendingV1 is a pending call.
type pendingV1 struct {
	ID        string         `json:"id"`
	Arguments map[string]any `json:"arguments"`
	// Digest is the digest of the tool's definition when the call was
	// deferred. It is "" for conduit's own search tool.
	Digest string   `json:"digest,omitempty"`
	Rule   string   `json:"rule,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Input  *inputV1 `json:"input,omitempty"`
	// Round counts the times the call was deferred again after a Resume
	// sent it. That happens when a server asks again. Each time is claimed
	// apart.
	Round int `json:"round,omitempty"`
	// Nested and Replay serve a run_code call. Nested is the call its code
	// made that waits. Replay are the calls made before it, with what they
	// got.
	Nested *NestedCall       `json:"nested,omitempty"`
	Replay []codemode.Record `json:"replay,omitempty"`
}

// inputV1 is what a server asked during a call that was deferred.
type inputV1 struct {
	Requests     mcp.InputRequestMap  `json:"requests"`
	Responses    mcp.InputResponseMap `json:"responses,omitempty"`
	RequestState string               `json:"request_state,omitempty"`
	Resend       bool                 `json:"resend,omitempty"`
	// Task is the server's task that asked (SEP-2663), taken up by id.
	Task *conduit.InputTask `json:"task,omitempty"`
}

// snapshot is the conversation's state document.
func (c *Conversation) snapshot() *stateV1 {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &stateV1{V: stateVersion, ID: c.id, Provider: c.p.String(), Principal: c.o.Principal,
		ListTaint: slices.Clone(c.listTaint), Taint: slices.Clone(c.taint), Turns: c.turns, NullPaths: c.o.NullPaths}
	st.Tools = make([]toolRef, 0, c.base.Len())
	for t := range c.base.All() {
		st.Tools = append(st.Tools, toolRef{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Digest: t.Digest()})
	}
	if c.search != nil {
		st.Revealed = slices.Clone(c.search.revealed)
	}
	if len(st.NullPaths) == 0 {
		st.NullPaths = nil
	}
	if t := c.turn; t != nil {
		st.Turn = t.document()
	}
	return st
}

// openState opens a sealed state and reads its document.
func openState(sc stateConfig, data []byte) (*stateV1, error) {
	if sc.sealer == nil {
		return nil, ErrNoStateKey
	}
	payload, err := sc.sealer.Open(string(data), time.Now())
	switch {
	case err == nil:
		return decodeState(payload)
	case errors.Is(err, seal.ErrExpired):
		return nil, ErrStateExpired
	case errors.Is(err, seal.ErrUnknownKey):
		return nil, ErrStateOtherKey
	case errors.Is(err, seal.ErrAltered):
		return nil, ErrStateAltered
	case errors.Is(err, seal.ErrTruncated):
		return nil, ErrStateTruncated
	case errors.Is(err, seal.ErrMalformed):
		return nil, fmt.Errorf("%w (%v)", ErrStateMalformed, err)
	}
	return nil, ErrInvalidState
}

// decodeState reads a state document. Conduit sealed it, so an error here
// is a state of another version, or a bug. Still, every field is checked
// as outside input is.
func decodeState(payload []byte) (*stateV1, error) {
	var head struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(payload, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	if head.V != stateVersion {
		return nil, fmt.Errorf("%w: version %d; this release reads version %d", ErrInvalidState, head.V, stateVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var st stateV1
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the document", ErrInvalidState)
	}
	if err := st.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	return &st, nil
}

// check reports what makes st unusable.
func (st *stateV1) check() error {
	if st.ID == "" {
		return errors.New("no id")
	}
	if st.Provider == "" {
		return errors.New("no provider") // resuming checks that it is the caller's
	}
	exposed := map[string]bool{}
	for _, t := range st.Tools {
		if t.Server == "" || t.Tool == "" || t.Exposed == "" || exposed[t.Exposed] {
			return fmt.Errorf("tool %q: incomplete or repeated", t.Exposed)
		}
		if t.Digest != "" {
			if err := digest.Check(t.Digest); err != nil {
				return fmt.Errorf("tool %q: %v", t.Exposed, err)
			}
		}
		exposed[t.Exposed] = true
	}
	if st.Turns < 0 {
		return errors.New("negative turns")
	}
	t := st.Turn
	if t == nil {
		return nil
	}
	if t.N < 1 || t.N > st.Turns || len(t.Calls) == 0 {
		return fmt.Errorf("turn %d of %d, with %d calls", t.N, st.Turns, len(t.Calls))
	}
	ids := map[string]bool{}
	pending := 0
	for i, c := range t.Calls {
		switch {
		case c.Pending != nil && (c.Answer != nil || c.Err != nil):
			return fmt.Errorf("call %d is both pending and answered", i+1)
		case c.Pending == nil && c.Answer == nil:
			return fmt.Errorf("call %d is neither pending nor answered", i+1)
		case c.Err != nil && !knownKind(c.Err.Kind):
			return fmt.Errorf("call %d: unknown kind %q", i+1, c.Err.Kind)
		case c.Pending != nil && c.Budget != nil:
			return fmt.Errorf("call %d is pending and has a budget", i+1)
		case c.Budget.check() != nil:
			return fmt.Errorf("call %d: %v", i+1, c.Budget.check())
		case c.Pending == nil:
			continue
		}
		p := c.Pending
		if p.ID == "" || ids[p.ID] || c.Name == "" || c.Server == "" || c.Tool == "" || p.Round < 0 {
			return fmt.Errorf("pending call %d: incomplete, or its id repeated", i+1)
		}
		if p.Digest != "" {
			if err := digest.Check(p.Digest); err != nil {
				return fmt.Errorf("pending call %d: %v", i+1, err)
			}
		}
		if p.Input != nil && len(p.Input.Requests) == 0 {
			return fmt.Errorf("pending call %d: input without requests", i+1)
		}
		ids[p.ID] = true
		pending++
	}
	if pending == 0 {
		return errors.New("a turn without pending calls")
	}
	return nil
}

// kindOf is the sentinel of the kind named name, as conduit.Error.String
// writes it.
func kindOf(name string) (*conduit.Error, bool) { return turn.Kind(name) }

func knownKind(name string) bool {
	_, ok := kindOf(name)
	return ok
}

// SavedState is what a saved state says, read without a source. It names
// whom the conversation is for, and its provider. It lists what waits for
// a decision. The person who decides can see it before anything is
// connected.
type SavedState struct {
	// Provider is the built-in provider the state names. It is the zero
	// Provider for one made with NewProvider. ProviderName holds that
	// one's name.
	Provider     Provider
	ProviderName string
	Principal    string
	// Taint is the conversation's taint as it was saved.
	Taint []string
	// Pending are the calls of the last turn that wait for a decision.
	// They are in the model's order (see Execution.Pending).
	Pending []Pending
}

// ReadState opens a state that State returned, as ResumeConversation
// does, and returns what it says. o's Keys must hold the key that sealed
// it. An altered state is refused with ErrInvalidState. ReadState lists
// and sends nothing.
func ReadState(state []byte, o *StateOptions) (*SavedState, error) {
	if o == nil {
		return nil, ErrNoStateKey
	}
	sc, err := o.config(nil)
	if err != nil {
		return nil, err
	}
	st, err := openState(sc, state)
	if err != nil {
		return nil, err
	}
	p, _ := ParseProvider(st.Provider) // the zero Provider when not built in
	out := &SavedState{Provider: p, ProviderName: st.Provider, Principal: st.Principal, Taint: slices.Clone(st.Taint)}
	if st.Turn != nil {
		for _, c := range pausedTurnOf(st.Turn).calls {
			if c.pending != nil {
				out.Pending = append(out.Pending, c.pending.Pending)
			}
		}
	}
	return out, nil
}
