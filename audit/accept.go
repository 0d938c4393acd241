package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit/internal/atomicfile"
	"github.com/conduitmcp/conduit/internal/digest"
)

// Accepted findings.
//
// A reviewer who has read a finding and decided the definition is fine
// accepts it. The acceptance names the server, the tool, the rule and the
// digest of the tool's definition that was read ([pins.ToolDigest]).
// So it lapses as soon as the definition changes, and the finding is
// reported again. Acceptances are kept in their own file beside the
// configuration (AcceptFile), not in the lock file of pins. The lock
// file's presence turns pinning on for every command. An acceptance
// written there would start leaving out every unpinned server's tools.
// And a reviewer may accept a finding without pinning anything.

// AcceptFile is the name of the file of accepted findings, kept beside the
// configuration file.
const AcceptFile = "mcp.audit.json"

// AcceptPath returns the path of the file of accepted findings beside a
// configuration file.
func AcceptPath(config string) string { return filepath.Join(filepath.Dir(config), AcceptFile) }

// Acceptance is one accepted finding: a rule's findings on a tool whose
// definition has the digest Digest.
type Acceptance struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Rule   string `json:"rule"`
	Digest string `json:"digest"`
}

type acceptKey struct{ server, tool, rule string }

// Accepted is a set of acceptances, at most one per server, tool and rule.
// The zero value is an empty set, as [NewAccepted] returns; it is safe for
// concurrent use and must not be copied.
type Accepted struct {
	mu sync.RWMutex
	m  map[acceptKey]string // -> digest
}

// NewAccepted returns an empty set.
func NewAccepted() *Accepted { return &Accepted{m: map[acceptKey]string{}} }

// Accept records the findings as accepted at their tools' current digests,
// replacing an earlier acceptance of the same server, tool and rule. A
// finding without a digest (its tool's definition cannot be encoded)
// cannot be accepted: Accept returns how many were recorded.
func (a *Accepted) Accept(findings []Finding) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[acceptKey]string{}
	}
	n := 0
	for _, f := range findings {
		if f.Digest == "" {
			continue
		}
		a.m[acceptKey{f.Server, f.Tool, f.Rule}] = f.Digest
		n++
	}
	return n
}

// Forget removes the acceptances within scope.
func (a *Accepted) Forget(scope Scope) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.m {
		if scope.match(k.server, k.tool, k.rule) {
			delete(a.m, k)
		}
	}
}

// List returns the acceptances, by server, tool and rule.
func (a *Accepted) List() []Acceptance {
	a.mu.RLock()
	out := make([]Acceptance, 0, len(a.m))
	for k, d := range a.m {
		out = append(out, Acceptance{Server: k.server, Tool: k.tool, Rule: k.rule, Digest: d})
	}
	a.mu.RUnlock()
	slices.SortFunc(out, func(x, y Acceptance) int {
		return cmp.Or(strings.Compare(x.Server, y.Server), strings.Compare(x.Tool, y.Tool), strings.Compare(x.Rule, y.Rule))
	})
	return out
}

// Mark returns a copy of findings with Accepted set on each that an
// acceptance covers at the finding's digest, and Lapsed on each that was
// accepted for another definition of its tool. A nil set accepts nothing.
func (a *Accepted) Mark(findings []Finding) []Finding {
	out := slices.Clone(findings)
	if a == nil {
		return out
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	for i := range out {
		f := &out[i]
		d, ok := a.m[acceptKey{f.Server, f.Tool, f.Rule}]
		f.Accepted = ok && f.Digest != "" && d == f.Digest
		f.Lapsed = ok && !f.Accepted
	}
	return out
}

// Open returns the findings that are not accepted.
func Open(findings []Finding) []Finding {
	return slices.DeleteFunc(slices.Clone(findings), func(f Finding) bool { return f.Accepted })
}

// Scope selects findings by server, and within it by tool, and within
// that by rule; an empty member selects everything at its level.
type Scope struct{ Server, Tool, Rule string }

// ParseScope parses SERVER, SERVER/TOOL or SERVER/TOOL:RULE. A tool name
// may hold "/" and ":": the rule is what follows the last ":" only when
// it is a rule's id.
func ParseScope(s string) (Scope, error) {
	server, rest, hasTool := strings.Cut(s, "/")
	if server == "" {
		return Scope{}, fmt.Errorf("scope %q: no server", s)
	}
	sc := Scope{Server: server}
	if !hasTool {
		return sc, nil
	}
	sc.Tool = rest
	if i := strings.LastIndex(rest, ":"); i >= 0 && ruleSeverity(rest[i+1:]) != 0 {
		sc.Tool, sc.Rule = rest[:i], rest[i+1:]
	}
	if sc.Tool == "" {
		return Scope{}, fmt.Errorf("scope %q: no tool after the /", s)
	}
	return sc, nil
}

// String returns the scope as ParseScope reads it.
func (s Scope) String() string {
	out := s.Server
	if s.Tool != "" {
		out += "/" + s.Tool
		if s.Rule != "" {
			out += ":" + s.Rule
		}
	}
	return out
}

// Matches reports whether the finding is within the scope.
func (s Scope) Matches(f Finding) bool { return s.match(f.Server, f.Tool, f.Rule) }

func (s Scope) match(server, tool, rule string) bool {
	return (s.Server == "" || s.Server == server) && (s.Tool == "" || s.Tool == tool) && (s.Rule == "" || s.Rule == rule)
}

// The file of accepted findings:
//
//	{
//	  "version": 1,
//	  "accepted": [
//	    {"server": "gitlab", "tool": "approve_merge_request", "rule": "secret-parameter", "digest": "sha256:…"}
//	  ]
//	}
type acceptFile struct {
	Version  int          `json:"version"`
	Accepted []Acceptance `json:"accepted"`
}

const acceptVersion = 1

// LoadAccepted reads a file of accepted findings; see [ParseAccepted].
func LoadAccepted(path string) (*Accepted, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := ParseAccepted(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// ParseAccepted parses a file of accepted findings, as [Accepted.Marshal]
// writes it. Unknown members, a missing member, a malformed digest and an
// acceptance given twice are errors; a rule this version does not know is
// kept (it accepts nothing here).
func ParseAccepted(data []byte) (*Accepted, error) {
	var f acceptFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("accepted findings: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("accepted findings: data after the top-level object")
	}
	if f.Version != acceptVersion {
		return nil, fmt.Errorf("accepted findings: version %d, want %d", f.Version, acceptVersion)
	}
	a := NewAccepted()
	for i, e := range f.Accepted {
		if e.Server == "" || e.Tool == "" || e.Rule == "" {
			return nil, fmt.Errorf("accepted findings: entry %d: server, tool and rule are required", i)
		}
		if err := digest.Check(e.Digest); err != nil {
			return nil, fmt.Errorf("accepted findings: entry %d: digest %w", i, err)
		}
		k := acceptKey{e.Server, e.Tool, e.Rule}
		if _, dup := a.m[k]; dup {
			return nil, fmt.Errorf("accepted findings: %s/%s:%s is accepted twice", e.Server, e.Tool, e.Rule)
		}
		a.m[k] = e.Digest
	}
	return a, nil
}

// Marshal returns the file: acceptances by server, tool and rule, one a
// line, so that a change to it reads well in a diff.
func (a *Accepted) Marshal() ([]byte, error) {
	list := a.List()
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"version\": %d,\n  \"accepted\": [", acceptVersion)
	for i, e := range list {
		line, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(line)
	}
	if len(list) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	return b.Bytes(), nil
}

// Save writes the file to path, replacing it at once (through a temporary
// file in the same directory), so that a reader never sees half of it.
func (a *Accepted) Save(path string) error {
	data, err := a.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o644)
}
