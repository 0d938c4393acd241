// Package seal authenticates what conduit hands out and later takes back
// from outside the process: a Conversation's saved state, the requestState
// of conduit serve. It is the one place where conduit signs and verifies
// such data; nothing else in conduit computes a MAC.
//
// A [Sealer] is made from one or more secrets (the first signs, every one
// verifies, so a key can be rotated) and a purpose. The key of each secret
// is derived for its purpose with HKDF (RFC 5869), so data sealed for one
// purpose never opens for another, even under the same secret. A sealed
// value is text:
//
//	cs1.<key id>.<expiry>.<payload>.<mac>
//
// where the key id names the derived key (it reveals nothing of the
// secret), the expiry is Unix seconds in base 36 or "0" for none, the
// payload is base64url, and the mac is HMAC-SHA-256 over everything before
// it. The payload is authenticated, not encrypted: do not seal what the
// holder of the sealed value must not read.
package seal

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MinSecret is the least length of a secret, in bytes.
const MinSecret = 32

const prefix = "cs1"

// b64 decodes strictly: a character whose unused low bits are set would
// otherwise decode to the same bytes, and one sealed value would have
// several texts.
var b64 = base64.RawURLEncoding.Strict()

var (
	// ErrInvalid is the error of a value that was not sealed by any of the
	// Sealer's keys for its purpose, or was altered, truncated or is not
	// a sealed value at all.
	ErrInvalid = errors.New("seal: not authentic")
	// ErrExpired is the error of an authentic value whose expiry has
	// passed.
	ErrExpired = errors.New("seal: expired")
)

// A Sealer seals and opens values for one purpose. It is safe for
// concurrent use.
type Sealer struct {
	keys []key // keys[0] seals
}

type key struct {
	id  string
	mac []byte
}

// New returns a Sealer for purpose over secrets: the first seals, all of
// them open. Each secret must be at least MinSecret bytes.
func New(purpose string, secrets ...[]byte) (*Sealer, error) {
	if len(secrets) == 0 {
		return nil, errors.New("seal: no secret")
	}
	if purpose == "" {
		return nil, errors.New("seal: no purpose")
	}
	s := &Sealer{}
	for i, sec := range secrets {
		if len(sec) < MinSecret {
			return nil, fmt.Errorf("seal: secret %d is %d bytes; it must be at least %d", i+1, len(sec), MinSecret)
		}
		k, err := hkdf.Key(sha256.New, sec, nil, "conduit seal v1: "+purpose, 32)
		if err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		id := sha256.Sum256(k)
		s.keys = append(s.keys, key{id: hex.EncodeToString(id[:6]), mac: k})
	}
	return s, nil
}

// ParseSecrets splits a list of secrets separated by commas, as an
// environment variable such as CONDUIT_STATE_KEY holds it (the first is
// the one that seals), each of at least MinSecret bytes. Surrounding
// white space is dropped. Its errors never show a secret.
func ParseSecrets(list string) ([][]byte, error) {
	var out [][]byte
	for i, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if len(s) < MinSecret {
			return nil, fmt.Errorf("seal: secret %d is %d bytes; it must be at least %d", i+1, len(s), MinSecret)
		}
		out = append(out, []byte(s))
	}
	if len(out) == 0 {
		return nil, errors.New("seal: no secret")
	}
	return out, nil
}

// Seal returns payload sealed with the first key. A non-zero expires makes
// Open refuse it from then on.
func (s *Sealer) Seal(payload []byte, expires time.Time) string {
	exp := "0"
	if !expires.IsZero() {
		exp = strconv.FormatInt(expires.Unix(), 36)
	}
	k := s.keys[0]
	var b strings.Builder
	b.Grow(len(prefix) + len(k.id) + len(exp) + base64.RawURLEncoding.EncodedLen(len(payload)) + 48)
	b.WriteString(prefix)
	b.WriteByte('.')
	b.WriteString(k.id)
	b.WriteByte('.')
	b.WriteString(exp)
	b.WriteByte('.')
	b.WriteString(base64.RawURLEncoding.EncodeToString(payload))
	signed := b.String()
	b.WriteByte('.')
	b.WriteString(base64.RawURLEncoding.EncodeToString(sum(k.mac, signed)))
	return b.String()
}

// Open returns the payload of sealed when one of the keys sealed it for
// this purpose and it is unaltered; ErrExpired when its expiry is not
// after now; else ErrInvalid.
func (s *Sealer) Open(sealed string, now time.Time) ([]byte, error) {
	i := strings.LastIndexByte(sealed, '.')
	if i < 0 {
		return nil, ErrInvalid
	}
	signed, macText := sealed[:i], sealed[i+1:]
	parts := strings.Split(signed, ".")
	if len(parts) != 4 || parts[0] != prefix {
		return nil, ErrInvalid
	}
	mac, err := b64.DecodeString(macText)
	if err != nil || len(mac) != sha256.Size {
		return nil, ErrInvalid
	}
	var k *key
	for j := range s.keys {
		if s.keys[j].id == parts[1] {
			k = &s.keys[j]
			break
		}
	}
	if k == nil || !hmac.Equal(mac, sum(k.mac, signed)) {
		return nil, ErrInvalid
	}
	// Authentic from here on: what follows was written by Seal.
	if parts[2] != "0" {
		exp, err := strconv.ParseInt(parts[2], 36, 64)
		if err != nil {
			return nil, ErrInvalid
		}
		if !now.Before(time.Unix(exp, 0)) {
			return nil, ErrExpired
		}
	}
	payload, err := b64.DecodeString(parts[3])
	if err != nil {
		return nil, ErrInvalid
	}
	return payload, nil
}

func sum(k []byte, signed string) []byte {
	h := hmac.New(sha256.New, k)
	h.Write([]byte(signed))
	return h.Sum(nil)
}
