// Package names holds the rules for names: a server's id, which the hub
// and the lock file both check, and an exposed name every provider takes.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// ServerID reports why id cannot be a server id, or nil. Server ids are
// the server part of exposed names and policy patterns. So they must be
// exposable as they are, and never contain the "__" separator.
func ServerID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("server id is empty")
	case strings.Contains(id, "__"):
		return fmt.Errorf("server id %q contains \"__\", the separator of exposed names", id)
	case len(id) > 32:
		return fmt.Errorf("server id %q is longer than 32 characters", id)
	case !exposable(id):
		return fmt.Errorf("server id %q must match ^[A-Za-z_][A-Za-z0-9_-]*$", id)
	}
	return nil
}

// exposable reports whether id matches ^[A-Za-z_][A-Za-z0-9_-]*$, the
// characters every provider accepts in a tool's name.
func exposable(id string) bool {
	for i, r := range id {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '-')) {
			return false
		}
	}
	return true
}

// MaxLen is the longest exposed tool name: OpenAI's limit, and within
// Anthropic's and Gemini's.
const MaxLen = 64

// hashLen is the length of the hex hash suffix given to names cut at
// MaxLen; 8 hex digits keep collisions between cut names unlikely while
// leaving most of the name readable.
const hashLen = 8

// Sanitize maps a tool name to the character set every provider accepts,
// ^[A-Za-z_][A-Za-z0-9_-]{0,63}$: other characters become '_', a name that
// does not start with a letter or '_' gets a '_' in front (Gemini requires
// it), and a name over MaxLen is cut and given a stable hash suffix of
// the whole name, so two long names that share a prefix stay distinct.
func Sanitize(name string) string {
	var b strings.Builder
	b.Grow(len(name) + 1)
	for i, r := range name {
		if i == 0 && !(isLetter(r) || r == '_') {
			b.WriteByte('_')
		}
		if isLetter(r) || (r >= '0' && r <= '9') || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	s := b.String()
	if len(s) <= MaxLen {
		return s
	}
	sum := sha256.Sum256([]byte(name))
	return s[:MaxLen-hashLen-1] + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

func isLetter(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') }
