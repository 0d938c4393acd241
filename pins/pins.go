// Package pins records the tool definitions a person reviewed, and reads
// and writes them as the lock file beside mcp.json.
//
// A tool's description is an instruction to the model. A server can change
// it after it was reviewed. Pins record, per server and tool, the digest
// of the definition that was reviewed (see [CanonicalTool]). A hub or
// client with conduit.Options.Pins offers only the tools whose listed
// definition has its pinned digest. A changed or new tool is left out of
// its tool set. It is reported as a [Drift] with a diff. A call to it is
// refused before anything is sent. No client can see what a server
// changes without saying so before it answers a call.
package pins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/conduitmcp/conduit/internal/atomicfile"
	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/internal/names"
	"github.com/conduitmcp/conduit/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LockFile is the name of the lock file of pinned definitions, kept beside
// the configuration file.
const LockFile = "mcp.lock.json"

// LockPath returns the path of the lock file beside a configuration file.
func LockPath(config string) string { return filepath.Join(filepath.Dir(config), LockFile) }

// ErrNotPinned is the cause of a call refused because the tool's listed
// definition is not the pinned one. errors.Is(err, ErrNotPinned) reports
// it.
var ErrNotPinned = errors.New("conduit: the tool's definition is not pinned")

// Pins is a set of pinned tool definitions. Per server id and tool name,
// it holds the digest and canonical JSON of one definition. The zero value
// is an empty set, as [New] returns. [Parse] and [Load] read a lock file.
// A Pins is safe for concurrent use, and must not be copied. A hub or
// client that has it checks its next listing against a change. Such a
// change is made by [Pins.Pin] or [Pins.Forget].
type Pins struct {
	mu      sync.RWMutex
	servers map[string]map[string]pinnedDef
	skills  map[string]map[string]string // server, skill name: digest
	gen     atomic.Uint64                // bumped by every change
}

type pinnedDef struct {
	digest    string
	canonical []byte
}

// New returns an empty set: with it, no tool is offered until it is
// pinned.
func New() *Pins { return &Pins{servers: map[string]map[string]pinnedDef{}} }

// Pin makes tools the pinned definitions of server, replacing what was
// pinned for it before. Tools without a name are not pinned. Nor are tools
// whose name the list holds more than once; a tool set offers none of
// them. A tool whose definition cannot be encoded (see [CanonicalTool]) is
// not pinned either. So it is not offered, while the others are. The error
// then holds a [*ToolError] for each such tool. errors.As finds the first.
func (p *Pins) Pin(server string, tools []*mcp.Tool) error {
	if err := names.ServerID(server); err != nil {
		return err
	}
	var errs []error
	count := map[string]int{}
	for _, t := range tools {
		if t != nil {
			count[t.Name]++
		}
	}
	defs := map[string]pinnedDef{}
	for _, t := range tools {
		if t == nil || t.Name == "" || count[t.Name] > 1 {
			continue
		}
		c, err := CanonicalTool(t)
		if err != nil {
			errs = append(errs, &ToolError{Server: server, Tool: t.Name, Err: err})
			continue
		}
		defs[t.Name] = pinnedDef{digest: digest.Of(c), canonical: c}
	}
	p.mu.Lock()
	if p.servers == nil {
		p.servers = map[string]map[string]pinnedDef{}
	}
	p.servers[server] = defs
	p.mu.Unlock()
	p.gen.Add(1)
	return errors.Join(errs...)
}

// ToolError is a tool that [Pins.Pin] left unpinned because its
// definition cannot be encoded.
type ToolError struct {
	Server, Tool string
	Err          error // why the definition cannot be encoded
}

// Error names the server and the tool, and says why it was not pinned.
func (e *ToolError) Error() string {
	// CanonicalTool's errors name the tool, most of them.
	why := strings.TrimPrefix(e.Err.Error(), fmt.Sprintf("tool %q: ", e.Tool))
	return fmt.Sprintf("server %s: tool %q not pinned: its definition cannot be encoded: %s", e.Server, e.Tool, why)
}

// Unwrap returns the encoding error.
func (e *ToolError) Unwrap() error { return e.Err }

// Forget removes every tool pin of server; its tools are then all new.
// Its skill pins stay: they are pinned one skill at a time.
func (p *Pins) Forget(server string) {
	p.mu.Lock()
	_, had := p.servers[server]
	delete(p.servers, server)
	p.mu.Unlock()
	if had {
		p.gen.Add(1)
	}
}

// Servers returns the ids of the servers that have pins, sorted.
func (p *Pins) Servers() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Sorted(maps.Keys(p.servers))
}

// Has reports whether server has pins. It may have none of any tool, when
// it was pinned listing no tools.
func (p *Pins) Has(server string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	_, ok := p.servers[server]
	return ok
}

// Digest returns the pinned digest of a server's tool.
func (p *Pins) Digest(server, tool string) (string, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	d, ok := p.servers[server][tool]
	return d.digest, ok
}

// Generation counts the changes to p (0 for nil). A hub that saw another
// rebuilds its tool sets against the pins.
func (p *Pins) Generation() uint64 {
	if p == nil {
		return 0
	}
	return p.gen.Load()
}

// DriftKind says how a listed tool differs from the pins.
type DriftKind int

// The kinds of drift.
const (
	// DriftChanged: the tool's listed definition is not the pinned one.
	DriftChanged DriftKind = iota + 1
	// DriftNew: the tool has no pin.
	DriftNew
	// DriftRemoved: a pinned tool is no longer listed. Only [Pins.Check]
	// reports it. Nothing is left out of a tool set for it.
	DriftRemoved
)

// String returns "changed", "new" or "removed".
func (k DriftKind) String() string {
	switch k {
	case DriftChanged:
		return "changed"
	case DriftNew:
		return "new"
	case DriftRemoved:
		return "removed"
	}
	return fmt.Sprintf("DriftKind(%d)", int(k))
}

// Drift is one tool whose listing differs from its pin.
type Drift struct {
	Server string    // the server's id
	Tool   string    // the tool's own name
	Kind   DriftKind // how it differs
	// Pinned is the pinned digest ("" for DriftNew). Listed is the listed
	// definition's. It is "" for DriftRemoved, or when the definition
	// cannot be encoded.
	Pinned, Listed string
	// Diff is a unified diff from the pinned definition to the listed one.
	// Each is indented one member a line. The characters a terminal would
	// not show are written as \uXXXX. For DriftNew every line is added.
	// For DriftRemoved every line is removed.
	Diff string
}

// Message is a one-line account of the drift, such as "tool search of
// server web: the definition changed since it was pinned".
func (d Drift) Message() string {
	what := "tool " + d.Tool + " of server " + d.Server
	switch d.Kind {
	case DriftChanged:
		return what + ": the definition changed since it was pinned"
	case DriftNew:
		return what + ": the tool is new, not pinned"
	case DriftRemoved:
		return what + ": the pinned tool is no longer listed"
	}
	return what + ": " + d.Kind.String()
}

// Check compares a server's listing with its pins. It returns every listed
// tool that is changed or new, and every pinned tool no longer listed. They
// come in order of name.
func (p *Pins) Check(server string, tools []*mcp.Tool) []Drift {
	var out []Drift
	listed := map[string]bool{}
	for _, t := range tools {
		if t == nil {
			continue
		}
		listed[t.Name] = true
		digest, err := ToolDigest(t)
		if d := p.Compare(server, t, digest, err); d != nil {
			out = append(out, *d)
		}
	}
	p.mu.RLock()
	for name, def := range p.servers[server] {
		if !listed[name] {
			out = append(out, Drift{Server: server, Tool: name, Kind: DriftRemoved, Pinned: def.digest,
				Diff: lineDiff("pinned "+def.digest, "listed: none", readableDefinition(def.canonical), "")})
		}
	}
	p.mu.RUnlock()
	slices.SortStableFunc(out, func(a, b Drift) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// Compare returns how t, listed by server, differs from its pin, or nil
// when it has its pinned digest. A nil Pins pins nothing and lets
// everything through. digest and err are ToolDigest(t), which a caller
// may have remembered.
func (p *Pins) Compare(server string, t *mcp.Tool, digest string, err error) *Drift {
	if p == nil {
		return nil
	}
	p.mu.RLock()
	def, ok := p.servers[server][t.Name]
	p.mu.RUnlock()
	if ok && err == nil && def.digest == digest {
		return nil
	}
	d := &Drift{Server: server, Tool: t.Name, Kind: DriftChanged, Pinned: def.digest, Listed: digest}
	if !ok {
		d.Kind = DriftNew
	}
	listedName, listedText := "listed: cannot be encoded", "the definition cannot be encoded: "
	if c, err := CanonicalTool(t); err == nil {
		listedName, listedText = "listed "+digest, readableDefinition(c)
	} else {
		listedText += err.Error()
	}
	pinnedName := "pinned: none"
	if ok {
		pinnedName = "pinned " + def.digest
	}
	d.Diff = lineDiff(pinnedName, listedName, readableDefinition(def.canonical), listedText)
	return d
}

// The lock file:
//
//	{
//	  "version": 1,
//	  "servers": {
//	    "web": {
//	      "fetch": {
//	        "digest": "sha256:…",
//	        "definition": {"description": "…", "inputSchema": {…}, "name": "fetch"}
//	      }
//	    }
//	  }
//	}
type lockFile struct {
	Version int                                 `json:"version"`
	Servers map[string]map[string]lockFileEntry `json:"servers"`
	// Skills are the pinned skills' digests, per server id and skill
	// name.
	Skills map[string]map[string]string `json:"skills,omitempty"`
}

type lockFileEntry struct {
	Digest     string          `json:"digest"`
	Definition json.RawMessage `json:"definition"`
}

// lockVersion is the lock file format this package reads and writes.
const lockVersion = 1

// definitionKeys are the members a pinned definition may have.
var definitionKeys = []string{"annotations", "description", "inputSchema", "name", "outputSchema", "title"}

// Load reads a lock file; see [Parse].
func Load(path string) (*Pins, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Parse parses a lock file, as [Pins.Marshal] writes it. Every entry's
// digest must be that of its definition. So a hand edit of one without the
// other is caught. The definition's name must be the entry's key. Unknown
// or repeated keys are errors.
func Parse(data []byte) (*Pins, error) {
	if err := noDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	var lf lockFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lf); err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("lock file: data after the top-level object")
	}
	if lf.Version != lockVersion {
		return nil, fmt.Errorf("lock file: version %d, want %d", lf.Version, lockVersion)
	}
	p := New()
	for server, tools := range lf.Servers {
		if err := names.ServerID(server); err != nil {
			return nil, fmt.Errorf("lock file: %w", err)
		}
		defs := map[string]pinnedDef{}
		for name, e := range tools {
			c, err := parsePinnedDefinition(name, e)
			if err != nil {
				return nil, fmt.Errorf("lock file: server %s, tool %q: %w", server, name, err)
			}
			defs[name] = pinnedDef{digest: e.Digest, canonical: c}
		}
		p.servers[server] = defs
	}
	for server, skills := range lf.Skills {
		if err := names.ServerID(server); err != nil {
			return nil, fmt.Errorf("lock file: skills: %w", err)
		}
		for name, d := range skills {
			if name == "" {
				return nil, fmt.Errorf("lock file: server %s: a skill name is empty", server)
			}
			if err := digest.Check(d); err != nil {
				return nil, fmt.Errorf("lock file: server %s, skill %q: %w", server, name, err)
			}
		}
	}
	if len(lf.Skills) > 0 {
		p.skills = lf.Skills
	}
	return p, nil
}

func parsePinnedDefinition(name string, e lockFileEntry) ([]byte, error) {
	if name == "" {
		return nil, errors.New("a tool name is empty")
	}
	if len(e.Definition) == 0 {
		return nil, errors.New(`no "definition"`)
	}
	var def map[string]any
	if err := json.Unmarshal(e.Definition, &def); err != nil || def == nil {
		return nil, errors.New(`"definition" must be an object`)
	}
	for k := range def {
		if !slices.Contains(definitionKeys, k) {
			return nil, fmt.Errorf("the definition has an unknown member %q", k)
		}
	}
	if n, _ := def["name"].(string); n != name {
		return nil, fmt.Errorf("the definition's name is %q", def["name"])
	}
	if _, ok := def["inputSchema"]; !ok {
		return nil, errors.New(`the definition has no "inputSchema"`)
	}
	c, err := CanonicalJSON(def)
	if err != nil {
		return nil, err
	}
	if err := digest.Check(e.Digest); err != nil {
		return nil, fmt.Errorf(`"digest" %w`, err)
	}
	if got := digest.Of(c); got != e.Digest {
		return nil, fmt.Errorf("the digest %s is not that of the definition (%s): was one edited without the other?", e.Digest, got)
	}
	return c, nil
}

// noDuplicateKeys walks a JSON document and fails on an object that holds
// a key twice. encoding/json would silently resolve it to the last.
func noDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next token of an object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k, ok := tok.(string)
			if !ok {
				return fmt.Errorf("expected a key, found %v", tok)
			}
			if top.keys[k] {
				return fmt.Errorf("key %q appears twice in one object", k)
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, frame{keys: map[string]bool{}, object: true, key: true})
		case json.Delim('['):
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top != nil && top.object {
				top.key = true
			}
		}
	}
}

// Marshal returns the lock file. Servers and tools come in order of name.
// Each definition is indented one member a line, in canonical order. The
// characters a terminal would not show are written as \uXXXX escapes.
// These decode to the same definition.
func (p *Pins) Marshal() ([]byte, error) {
	lf := lockFile{Version: lockVersion, Servers: map[string]map[string]lockFileEntry{}}
	p.mu.RLock()
	for server, defs := range p.servers {
		tools := map[string]lockFileEntry{}
		for name, d := range defs {
			tools[name] = lockFileEntry{Digest: d.digest, Definition: d.canonical}
		}
		lf.Servers[server] = tools
	}
	p.mu.RUnlock()
	if sk := p.skillPins(); len(sk) > 0 {
		lf.Skills = sk
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(lf); err != nil {
		return nil, err
	}
	return []byte(textsafe.Escape(b.String())), nil
}

// Save writes the lock file to path, replacing it at once. It goes through
// a temporary file in the same directory. So a reader never sees half of
// it.
func (p *Pins) Save(path string) error {
	data, err := p.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o644)
}

// PinSkill pins a skill's digest under its server and name. It replaces
// what was pinned for that skill before. The digest is the skill's
// (skills.Skill.Digest). It covers the manifest, so it pins the files.
func (p *Pins) PinSkill(server, name, d string) error {
	if err := names.ServerID(server); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("pins: a skill of server %s has no name", server)
	}
	if err := digest.Check(d); err != nil {
		return fmt.Errorf("pins: skill %s of server %s: %w", name, server, err)
	}
	p.mu.Lock()
	if p.skills == nil {
		p.skills = map[string]map[string]string{}
	}
	if p.skills[server] == nil {
		p.skills[server] = map[string]string{}
	}
	p.skills[server][name] = d
	p.mu.Unlock()
	p.gen.Add(1)
	return nil
}

// SkillDigest returns the pinned digest of a server's skill.
func (p *Pins) SkillDigest(server, name string) (string, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	d, ok := p.skills[server][name]
	return d, ok
}

// SkillPins returns a copy of server's pinned skills: name, digest.
func (p *Pins) SkillPins(server string) map[string]string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return maps.Clone(p.skills[server])
}

// ForgetSkills forgets server's skill pins, as Forget forgets its tools'.
func (p *Pins) ForgetSkills(server string) {
	p.mu.Lock()
	delete(p.skills, server)
	p.mu.Unlock()
	p.gen.Add(1)
}

// skillPins returns a copy of the pinned skills, for the lock file.
func (p *Pins) skillPins() map[string]map[string]string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]map[string]string, len(p.skills))
	for s, m := range p.skills {
		out[s] = maps.Clone(m)
	}
	return out
}
