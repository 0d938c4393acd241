package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/codemode"
	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/internal/seal"
)

// The requestState the gateway hands a client of protocol 2026-07-28 with
// an input-required result, and takes back with its retry. It is sealed
// by internal/seal under the gateway's StateKeys: encrypted and
// authenticated. So any replica that has the keys opens it. The client
// reads nothing of it, and an altered one is refused. It is bound to the
// request it was issued for.

// statePurpose is the purpose the requestState's keys are derived for. So
// a Conversation's saved state, sealed for its own, never opens as one.
const statePurpose = "requestState"

// stateVersion is the version of the payload. A state of another version
// is refused.
const stateVersion = 1

// maxStateBytes bounds a requestState a client sends, before it is
// opened. One the gateway issued is the server's own state and a few
// hundred bytes. A client would send the server's state anyway.
const maxStateBytes = 64 << 10

// The kinds of question a state follows.
const (
	// kindApproval: the gateway asked the client to approve the call (an
	// "ask" rule). The retry's answer decides it.
	kindApproval = "approval"
	// kindServer: the server asked for input by a multi-round-trip
	// result. Server is its requestState, sent back to it with the
	// answers.
	kindServer = "server"
	// kindWait: the server asked by a JSON-RPC request during the call
	// (protocol 2025-11-25 or before). The call waits for the answer in
	// the replica that runs it. Wait names it there.
	kindWait = "wait"
	// kindCode: a call made by run_code's code asked for approval. The
	// retry runs the code again. Replay answers the calls it made before
	// from their records. The client's answer decides the call that asked.
	kindCode = "code"
)

// state is what a requestState holds. It is encrypted. The client reads
// none of it (the server's own state included), and cannot change it.
type state struct {
	V int `json:"v"`
	// ID is the state's own: the key of its single use (store.Claims).
	ID string `json:"id"`
	// What it was issued for: a retry of another request is refused.
	Method    string `json:"m"`           // tools/call, prompts/get, resources/read
	Name      string `json:"n"`           // the tool or prompt as exposed, or the URI
	Args      string `json:"a,omitempty"` // digest of the arguments (argsDigest)
	Principal string `json:"p"`
	// What the retry goes on with.
	Kind     string   `json:"k"`
	Approved bool     `json:"ok,omitempty"` // an earlier round approved the call
	Asked    []string `json:"q,omitempty"`  // the ids of the input requests asked
	Server   string   `json:"s,omitempty"`  // the server's requestState (kindServer)
	Wait     string   `json:"w,omitempty"`  // the waiting call (kindWait)
	// The code's run (kindCode): the calls made, and the tool asked about.
	Replay []codemode.Record `json:"r,omitempty"`
	Tool   string            `json:"t,omitempty"`
}

// binding is the request a state is checked against.
type binding struct {
	method, name, args, principal string
}

// Errors of a retry's requestState, each answered as invalid params.
var (
	errStateInvalid = errors.New("the requestState is not valid")
	errStateExpired = errors.New("the requestState has expired: make the request again without it")
	errStateOther   = errors.New("the requestState was issued for another request")
	// Why it is not valid; each matches errStateInvalid.
	errStateOtherKey  = fmt.Errorf("%w: it was not issued by this gateway (or a replica with its keys, CONDUIT_STATE_KEY): it is sealed under another key, or one rotated out", errStateInvalid)
	errStateAltered   = fmt.Errorf("%w: it was altered", errStateInvalid)
	errStateTruncated = fmt.Errorf("%w: it is truncated", errStateInvalid)
	errStateMalformed = fmt.Errorf("%w: it is not a requestState this gateway issues", errStateInvalid)
	errStateVersion   = fmt.Errorf("%w: it was issued by a gateway of another version", errStateInvalid)
)

// newStateID returns a random id for a state.
func newStateID() string { return rand.Text() }

// sealState seals st, valid until expires.
func sealState(s *seal.Sealer, st *state, expires time.Time) (string, error) {
	st.V = stateVersion
	data, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return s.Seal(data, expires), nil
}

// openState opens a retry's requestState and checks that it was issued
// for b. Nothing in it is used unless it passes.
func openState(s *seal.Sealer, sealed string, b binding, now time.Time) (*state, error) {
	if len(sealed) > maxStateBytes {
		return nil, errStateMalformed
	}
	data, err := s.Open(sealed, now)
	switch {
	case err == nil:
	case errors.Is(err, seal.ErrExpired):
		return nil, errStateExpired
	case errors.Is(err, seal.ErrUnknownKey):
		return nil, errStateOtherKey
	case errors.Is(err, seal.ErrAltered):
		return nil, errStateAltered
	case errors.Is(err, seal.ErrTruncated):
		return nil, errStateTruncated
	default:
		return nil, errStateMalformed
	}
	st, err := decodeState(data)
	if err != nil {
		// Authentic yet unreadable: sealed by a gateway of another version.
		return nil, errStateVersion
	}
	if st.Method != b.method || st.Name != b.name || st.Args != b.args || st.Principal != b.principal {
		return nil, errStateOther
	}
	return st, nil
}

// decodeState decodes a state's payload. It must be of the version this
// gateway writes, with every field known, an id and a kind it knows.
func decodeState(data []byte) (*state, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var st state
	if err := dec.Decode(&st); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	if st.V != stateVersion {
		return nil, fmt.Errorf("version %d", st.V)
	}
	switch {
	case st.ID == "":
		return nil, errors.New("no id")
	case st.Kind == kindServer, st.Kind == kindApproval:
	case st.Kind == kindCode && st.Tool != "":
	case st.Kind == kindWait && st.Wait != "" && len(st.Asked) == 1:
	default:
		return nil, fmt.Errorf("kind %q", st.Kind)
	}
	return &st, nil
}

// argsDigest is the digest of a request's arguments, as JSON. It does not
// depend on the order of object members or on white space. The client's
// retry must carry the same arguments as the request the state was
// issued for. Numbers keep their text (1 and 1.0 differ). So no two
// arguments that a server could tell apart share a digest.
func argsDigest(raw json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	if v == nil {
		return "", nil // null is no arguments, as absent ones are
	}
	data, err := json.Marshal(v) // object members sorted
	if err != nil {
		return "", err
	}
	return digest.Of(data), nil
}
