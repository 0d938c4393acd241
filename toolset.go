package conduit

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/names"
	"github.com/conduitmcp/conduit/pins"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is one tool of a [ToolSet]. It holds the server's own definition
// through the embedded *mcp.Tool: name, description, schemas, annotations.
// It also holds the name a model sees. A Tool is shared by every holder of
// its tool set and must not be modified.
type Tool struct {
	*mcp.Tool
	// Exposed is the name offered to a model. It is the sanitized tool name
	// with the client's prefix, or server__tool in a hub.
	Exposed string
	// Server is the id of the server that lists the tool.
	Server string
	// MaxResultTokens is the budget of the tool's results for a model, in
	// tokens. Its server's configuration gives it
	// (Server.MaxResultTokens; ServerTools.MaxResultTokens). It is 0 when
	// that gives none, negative for no budget. Package adapters and the
	// gateway apply it.
	MaxResultTokens int

	once      sync.Once
	validator *jsonschema.Resolved
	schemaErr error
	memo      sync.Map
}

// Memo returns the value kept under key for this tool. It computes it with
// f the first time. Provider adapters keep per-tool work in it, such as a
// cleaned description or a converted schema. So that work is done once
// per tool set rather than on every listing. Keys should be of an
// unexported type, as with context keys.
func (t *Tool) Memo(key any, f func() any) any {
	if v, ok := t.memo.Load(key); ok {
		return v
	}
	v, _ := t.memo.LoadOrStore(key, f())
	return v
}

// digestKey keeps a Tool's Digest in its Memo.
type digestKey struct{}

// Digest returns ToolDigest of the tool's definition, computed once per
// Tool. A saved reference to the tool compares it to tell that the
// definition did not change. Such a reference is a paused conversation or
// a durable workflow's offer. Digest is "" for a nil Tool or one without a
// definition. It is "" too when the definition cannot be encoded. "" matches
// no digest.
func (t *Tool) Digest() string {
	if t == nil || t.Tool == nil {
		return ""
	}
	return t.Memo(digestKey{}, func() any {
		d, err := pins.ToolDigest(t.Tool)
		if err != nil {
			return ""
		}
		return d
	}).(string)
}

// validate checks args against the tool's input schema. It compiles the
// schema on first use. The compiled schema lives as long as the tool set.
// A schema that the validator cannot compile (another draft, a remote
// $ref) is not enforced here. The server still validates.
func (t *Tool) validate(args map[string]any) error {
	t.once.Do(func() {
		t.validator, t.schemaErr = compileSchema(t.InputSchema)
	})
	if t.validator == nil {
		return nil
	}
	return t.validator.Validate(args)
}

func compileSchema(schema any) (*jsonschema.Resolved, error) {
	if schema == nil {
		return nil, nil
	}
	var s jsonschema.Schema
	switch v := schema.(type) {
	case *jsonschema.Schema:
		s = *v
	default:
		data, err := json.Marshal(schema)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, err
		}
	}
	return s.Resolve(nil)
}

// SkipReason says why a tool was left out of a tool set.
type SkipReason int

// The reasons a tool is left out.
const (
	// SkipFiltered: the tool filter refused it.
	SkipFiltered SkipReason = iota + 1
	// SkipCollision: another tool has the same exposed name. Both are left
	// out so that neither silently shadows the other.
	SkipCollision
	// SkipInvalidName: the server listed a name that cannot be exposed
	// (empty, or not valid UTF-8).
	SkipInvalidName
	// SkipServerDown: the server is down, so none of its tools are offered.
	SkipServerDown
	// SkipPolicy: the policy denies the tool outright for the principal and
	// taint of the listing.
	SkipPolicy
	// SkipPinChanged: the tool's definition is not the pinned one (see
	// [ToolSet.Drift] for the diff).
	SkipPinChanged
	// SkipPinNew: pins are configured and the tool has none.
	SkipPinNew
	// SkipNoPrincipal: the server's sessions are per principal
	// ([IdentityPrincipal]). The listing is for no principal. So none of
	// its tools are offered ([ErrNoPrincipal]).
	SkipNoPrincipal
	// SkipAppOnly: only an MCP App may call the tool (apps.AppOnly). A
	// listing for a model leaves it out ([ListOptions.AppTools]).
	SkipAppOnly
)

// String returns the reason's snake_case name, such as "server_down".
func (r SkipReason) String() string {
	switch r {
	case SkipFiltered:
		return "filtered"
	case SkipCollision:
		return "collision"
	case SkipInvalidName:
		return "invalid_name"
	case SkipServerDown:
		return "server_down"
	case SkipPolicy:
		return "policy"
	case SkipPinChanged:
		return "pin_changed"
	case SkipPinNew:
		return "pin_new"
	case SkipNoPrincipal:
		return "no_principal"
	case SkipAppOnly:
		return "app_only"
	}
	return fmt.Sprintf("SkipReason(%d)", int(r))
}

// Skipped reports one tool left out of a tool set. For SkipServerDown and
// SkipNoPrincipal, it reports one whole server.
type Skipped struct {
	Server  string     // the server's id
	Tool    string     // the tool's own name; empty for a whole server
	Exposed string     // the name it would have had, when there is one
	Reason  SkipReason // why it was left out
	Detail  string     // the reason in words: the server's error, the policy's rule
}

// ServerTools is one server's tool list, an input of [NewToolSet].
type ServerTools struct {
	Server string      // the server's id
	Tools  []*mcp.Tool // as the server listed them, in any order
	// Down, when set, says why the server is unavailable; its tools are left
	// out and reported.
	Down error
	// MaxResultTokens is the server's Server.MaxResultTokens, given to
	// each of its tools (Tool.MaxResultTokens).
	MaxResultTokens int
}

// ToolSetOptions configure how [NewToolSet] names and chooses tools, as a
// hub's or a client's listing does.
type ToolSetOptions struct {
	// Namespace exposes tools as server__tool, as a [Hub] does. Otherwise
	// tools keep their own sanitized names, as a [Client]'s do.
	Namespace bool
	// Options, when set, are those of the hub or client whose tool set this
	// is. Their Prefix names the tools. Their Filter and Pins choose them,
	// as in a listing. Nil means no prefix, every tool.
	Options *Options

	digests *digestCache // a hub's, kept between its tool sets
}

// naming returns what of o a tool set uses, with nil for none.
func (o *ToolSetOptions) naming() (namespace bool, prefix string, filter func(string, *mcp.Tool) bool, pinned *pins.Pins) {
	if o == nil {
		return false, "", nil, nil
	}
	if o.Options != nil {
		prefix, filter, pinned = o.Options.Prefix, o.Options.Filter, o.Options.Pins
	}
	return o.Namespace, prefix, filter, pinned
}

type serverTool struct{ server, tool string }

// ToolSet is an immutable, ordered set of tools. Servers are in
// configuration order, and tools by name within a server. So a listing is
// byte-identical between turns, and a provider's prompt cache keeps
// working. It resolves an exposed name to its server and tool and back.
type ToolSet struct {
	tools   []*Tool
	byName  map[string]*Tool
	byOrig  map[serverTool]*Tool
	skipped []Skipped
	search  searchState // built by the first Search
	drift   []pins.Drift
	listed  []ServerTools
	// How exposed names were made (NewToolSet). This tells a name of a
	// server that is down from an unknown one. named is false when that is
	// not known (ToolSetOf).
	named     bool
	namespace bool
	prefix    string
}

// NewToolSet builds a tool set from servers' tool lists, in the order given.
// Most programs get tool sets from [Hub.ListTools] or [Client.ListTools].
// NewToolSet serves tests and programs that drive the pipeline themselves.
// opts may be nil for the defaults.
func NewToolSet(opts *ToolSetOptions, servers ...ServerTools) *ToolSet {
	namespace, prefix, filter, pinned := opts.naming()
	var digests *digestCache
	if opts != nil {
		digests = opts.digests
	}
	ts := &ToolSet{byName: map[string]*Tool{}, byOrig: map[serverTool]*Tool{}, listed: slices.Clone(servers),
		named: true, namespace: namespace, prefix: prefix}
	var candidates []*Tool
	for _, st := range servers {
		if st.Down != nil {
			ts.skipped = append(ts.skipped, downSkipped(st.Server, st.Down))
			continue
		}
		sorted := slices.Clone(st.Tools)
		sorted = slices.DeleteFunc(sorted, func(t *mcp.Tool) bool { return t == nil })
		slices.SortStableFunc(sorted, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
		listed := make(map[string]int, len(sorted))
		for _, t := range sorted {
			listed[t.Name]++
		}
		for _, t := range sorted {
			switch {
			case t.Name == "" || !utf8.ValidString(t.Name):
				ts.skipped = append(ts.skipped, Skipped{Server: st.Server, Tool: t.Name, Reason: SkipInvalidName,
					Detail: "the server listed a tool name that is empty or not valid UTF-8"})
				continue
			case listed[t.Name] > 1:
				// Which definition the server would run is unknown, so none
				// is offered.
				ts.skipped = append(ts.skipped, Skipped{Server: st.Server, Tool: t.Name,
					Exposed: exposedName(namespace, st.Server, prefix, t.Name), Reason: SkipCollision,
					Detail: fmt.Sprintf("the server listed this name %d times; none of them is offered", listed[t.Name])})
				continue
			case filter != nil && !filter(st.Server, t):
				ts.skipped = append(ts.skipped, Skipped{Server: st.Server, Tool: t.Name, Reason: SkipFiltered,
					Detail: "left out by the tool filter"})
				continue
			}
			if pinned != nil {
				digest, err := digests.digest(t)
				if d := pinned.Compare(st.Server, t, digest, err); d != nil {
					ts.skipped = append(ts.skipped, Skipped{Server: st.Server, Tool: t.Name, Reason: driftSkip(d),
						Exposed: exposedName(namespace, st.Server, prefix, t.Name), Detail: d.Message()})
					ts.drift = append(ts.drift, *d)
					continue
				}
			}
			candidates = append(candidates, &Tool{
				Tool:            t,
				Server:          st.Server,
				Exposed:         exposedName(namespace, st.Server, prefix, t.Name),
				MaxResultTokens: st.MaxResultTokens,
			})
		}
	}
	count := make(map[string]int, len(candidates))
	for _, t := range candidates {
		count[t.Exposed]++
	}
	ts.tools = make([]*Tool, 0, len(candidates))
	for _, t := range candidates {
		if count[t.Exposed] > 1 {
			ts.skipped = append(ts.skipped, Skipped{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Reason: SkipCollision,
				Detail: fmt.Sprintf("%d tools would be exposed as %q; all of them are left out", count[t.Exposed], t.Exposed)})
			continue
		}
		ts.add(t)
	}
	return ts
}

func (ts *ToolSet) add(t *Tool) {
	ts.tools = append(ts.tools, t)
	ts.byName[t.Exposed] = t
	ts.byOrig[serverTool{t.Server, t.Name}] = t
}

// Len returns the number of tools.
func (ts *ToolSet) Len() int {
	if ts == nil {
		return 0
	}
	return len(ts.tools)
}

// All yields the tools in order.
func (ts *ToolSet) All() iter.Seq[*Tool] {
	return func(yield func(*Tool) bool) {
		if ts == nil {
			return
		}
		for _, t := range ts.tools {
			if !yield(t) {
				return
			}
		}
	}
}

// Lookup resolves an exposed name.
func (ts *ToolSet) Lookup(exposed string) (*Tool, bool) {
	if ts == nil {
		return nil, false
	}
	t, ok := ts.byName[exposed]
	return t, ok
}

// ExposedName returns the name under which a server's tool is offered.
func (ts *ToolSet) ExposedName(server, tool string) (string, bool) {
	if ts == nil {
		return "", false
	}
	t, ok := ts.byOrig[serverTool{server, tool}]
	if !ok {
		return "", false
	}
	return t.Exposed, true
}

// Skipped reports what was left out and why, in server order.
func (ts *ToolSet) Skipped() []Skipped {
	if ts == nil {
		return nil
	}
	return slices.Clone(ts.skipped)
}

// downServer returns the server that is down in the set and whose tool
// name would be. In a hub, that is the server of the name's server__
// part. In a client, it is its one server. ok is false when name names no
// such server.
func (ts *ToolSet) downServer(name string) (server, detail string, ok bool) {
	if ts == nil || !ts.named {
		return "", "", false
	}
	for _, s := range ts.skipped {
		if s.Reason != SkipServerDown && s.Reason != SkipNoPrincipal {
			continue
		}
		if !ts.namespace || strings.HasPrefix(name, names.Sanitize(ts.prefix+s.Server+"__")) {
			return s.Server, s.Detail, true
		}
	}
	return "", "", false
}

// unknown is the error of a call of name, which the set does not offer.
// name may be a tool name of a server that is down. Then it is
// ErrUnavailable: the model was offered the tool earlier, and may try
// again later. Else it is ErrUnknownTool.
func (ts *ToolSet) unknown(name string) *Error {
	if server, detail, ok := ts.downServer(name); ok {
		var cause error
		if detail != "" {
			cause = errors.New(detail)
		}
		for _, st := range ts.listed {
			if st.Server == server && st.Down != nil {
				cause = st.Down // errors.Is reaches why: a login needed, no principal
			}
		}
		return sessionError(server, "", name, "", cause)
	}
	return unknownToolError(name)
}

// Warnings says what a program should tell its user of the tool set
// before offering it to a model:
//
//   - first, when the set offers no tool at all because its servers are
//     down, a warning saying so
//   - each server that is down, whose tools are missing
//   - each server whose sessions are per principal, when the listing is
//     for none
//
// A server that comes back is in the next listing.
func (ts *ToolSet) Warnings() []string {
	if ts == nil {
		return nil
	}
	var down, out []string
	for _, s := range ts.skipped {
		if s.Reason == SkipNoPrincipal {
			out = append(out, "server "+s.Server+" serves each principal with their own credentials, so its tools are offered only to a listing for a principal")
			continue
		}
		if s.Reason != SkipServerDown {
			continue
		}
		down = append(down, s.Server)
		out = append(out, "server "+s.Server+" is down, so its tools are not offered: "+s.Detail)
	}
	if len(down) > 0 && len(ts.tools) == 0 {
		out = append([]string{"no tools are offered: the servers are down (" + strings.Join(down, ", ") + ")"}, out...)
	}
	return out
}

// Filter returns a tool set of the tools for which keep returns true. Each
// tool left out is reported with reason.
func (ts *ToolSet) Filter(reason SkipReason, keep func(*Tool) bool) *ToolSet {
	return ts.filter(reason, func(t *Tool) (bool, string) { return keep(t), "" })
}

// filter is Filter whose keep also says why a tool is left out. The words
// are the Skipped entry's Detail.
func (ts *ToolSet) filter(reason SkipReason, keep func(*Tool) (bool, string)) *ToolSet {
	if ts == nil {
		return NewToolSet(nil)
	}
	out := &ToolSet{
		byName:  make(map[string]*Tool, len(ts.tools)),
		byOrig:  make(map[serverTool]*Tool, len(ts.tools)),
		skipped: slices.Clone(ts.skipped),
		drift:   ts.drift,
		listed:  ts.listed,
		named:   ts.named, namespace: ts.namespace, prefix: ts.prefix,
	}
	for _, t := range ts.tools {
		if ok, why := keep(t); ok {
			out.add(t)
		} else {
			out.skipped = append(out.skipped, Skipped{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Reason: reason, Detail: why})
		}
	}
	return out
}

// Listings returns the servers' tool lists the set was made of, as they
// were listed. The tools left out (filtered, unpinned, colliding) are
// there too. The lists are shared and must not be modified.
func (ts *ToolSet) Listings() []ServerTools {
	if ts == nil {
		return nil
	}
	return slices.Clone(ts.listed)
}

// downSkipped is the entry of a whole server left out of a set for why.
// It is down, or per principal in a listing for none.
func downSkipped(server string, why error) Skipped {
	if errors.Is(why, ErrNoPrincipal) {
		return Skipped{Server: server, Reason: SkipNoPrincipal, Detail: why.Error()}
	}
	return Skipped{Server: server, Reason: SkipServerDown, Detail: why.Error()}
}
