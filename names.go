package conduit

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/conduitmcp/conduit/internal/names"
)

// MaxNameLen is the longest exposed tool name: OpenAI's limit, and within
// Anthropic's and Gemini's.
const MaxNameLen = 64

// hashLen is the length of the hex hash suffix given to names cut at
// MaxNameLen; 8 hex digits keep collisions between cut names unlikely while
// leaving most of the name readable.
const hashLen = 8

// SanitizeName maps a tool name to the character set every provider accepts,
// ^[A-Za-z_][A-Za-z0-9_-]{0,63}$: other characters become '_', a name that
// does not start with a letter or '_' gets a '_' in front (Gemini requires
// it), and a name over MaxNameLen is cut and given a stable hash suffix of
// the whole name, so two long names that share a prefix stay distinct.
func SanitizeName(name string) string {
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
	if len(s) <= MaxNameLen {
		return s
	}
	sum := sha256.Sum256([]byte(name))
	return s[:MaxNameLen-hashLen-1] + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

func isLetter(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') }

// validServerID reports why id cannot be a server id, or nil.
func validServerID(id string) error { return names.ServerID(id) }

// exposedName is the name a model sees: prefix+tool for a client, or
// prefix+server__tool in a hub (namespace true). The cut and hash apply to
// the whole name so that it fits MaxNameLen.
func exposedName(namespace bool, server, prefix, tool string) string {
	if namespace {
		return SanitizeName(prefix + server + "__" + tool)
	}
	return SanitizeName(prefix + tool)
}
