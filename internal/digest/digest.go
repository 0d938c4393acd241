// Package digest is the one form of conduit's digests, "sha256:" and 64
// lowercase hex digits: of tool definitions, which the lock file of pins
// and the audit's file of accepted findings both record and read, and of
// a call, in the keys of its claims.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

const prefix = "sha256:"

// Of returns the digest of data.
func Of(data []byte) string {
	sum := sha256.Sum256(data)
	return prefix + hex.EncodeToString(sum[:])
}

// Call returns the digest of a call of the tool exposed as name with the
// arguments args (JSON text): it names the call in the key of its claim,
// so that a key is only ever found by the same call. Keys already in a
// store depend on it: it must not change.
func Call(name string, args []byte) string {
	return Of(append([]byte(name+"\n"), args...))
}

// Check reports a string that is not a digest in the form Of writes.
func Check(s string) error {
	if h, ok := strings.CutPrefix(s, prefix); ok && len(h) == 2*sha256.Size && lowerHex(h) {
		return nil
	}
	return fmt.Errorf("%q is not %q and %d lowercase hex digits", s, prefix, 2*sha256.Size)
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
