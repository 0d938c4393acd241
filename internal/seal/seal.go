// Package seal encrypts and authenticates what conduit hands out and later
// takes back from outside the process: a Conversation's saved state, the
// requestState of conduit serve. It is the one place where conduit seals
// and opens such data.
//
// A [Sealer] is made from one or more secrets (the first seals, every one
// opens, so a key can be rotated) and a purpose. The keys of each secret
// are derived for its purpose with HKDF (RFC 5869), so data sealed for one
// purpose never opens for another, even under the same secret. A sealed
// value is text, safe in a URL or a cookie:
//
//	cs2.<key id>.<expiry>.<length>.<sealed bytes>
//
// Version 2 (cs2) encrypts and authenticates the payload with AES-256-GCM
// under a random nonce. The key id names the derived key (it is derived
// apart and reveals nothing of the key); the expiry is Unix seconds in
// base 36, or "0" for none; the length is the count of sealed bytes,
// which are base64url. The purpose and everything before the sealed bytes
// are the additional data: the version, key id, expiry and length cannot
// change without the value failing to open. The nonce is random (96
// bits): a key seals up to 2^32 values safely, so rotate it well before.
//
// Version 1 (cs1) is only read, never written:
//
//	cs1.<key id>.<expiry>.<payload>.<mac>
//
// Its payload is base64url in the clear and the mac is HMAC-SHA-256 over
// everything before it. Only an authentic value of version 1 opens. Its
// reading will be removed in conduit 0.5, when every version 1 state has
// outlived the 30 days a saved state lives by default.
//
// Open tells apart why a value does not open: [ErrUnknownKey],
// [ErrAltered], [ErrTruncated], [ErrMalformed] (each matching
// [ErrInvalid] as well) and [ErrExpired].
package seal

import (
	"crypto/aes"
	"crypto/cipher"
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

// MinSecret is the least length of a secret, in bytes. A secret must be
// random, not a password: HKDF derives keys from it, it does not stretch
// it.
const MinSecret = 32

// The prefixes of the versions: the one written, and the one only read.
const (
	prefixV2 = "cs2"
	prefixV1 = "cs1"
)

// b64 decodes strictly: a character whose unused low bits are set would
// otherwise decode to the same bytes, and one sealed value would have
// several texts.
var b64 = base64.RawURLEncoding.Strict()

// ErrInvalid is matched by the error of every value that does not open
// for a reason other than its expiry: another key, altered, truncated, or
// not a sealed value at all.
var ErrInvalid = errors.New("seal: not authentic")

// The reasons a value does not open, for errors.Is. Each matches
// ErrInvalid too.
var (
	// ErrNoKey is the error of New and ParseSecrets without a secret.
	ErrNoKey = errors.New("seal: no key")
	// ErrUnknownKey is the error of a value sealed under a key that is
	// not among the Sealer's: another key, one rotated out, or the key
	// of another purpose.
	ErrUnknownKey error = &invalidError{"seal: sealed under another key (its key id is not among the keys)"}
	// ErrAltered is the error of a value that fails authentication: a
	// byte of it was changed.
	ErrAltered error = &invalidError{"seal: altered (authentication failed)"}
	// ErrTruncated is the error of a value cut short.
	ErrTruncated error = &invalidError{"seal: truncated"}
	// ErrMalformed is the error of a text that is not a sealed value:
	// not one at all, bad base64, or a version this release does not
	// read.
	ErrMalformed error = &invalidError{"seal: not a sealed value"}
	// ErrExpired is the error of an authentic value whose expiry has
	// passed.
	ErrExpired = errors.New("seal: expired")
)

// invalidError is a reason a value does not open; it matches ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// malformed is ErrMalformed with why.
func malformed(why string) error { return fmt.Errorf("%w: %s", ErrMalformed, why) }

// A Sealer seals and opens values for one purpose. It is safe for
// concurrent use.
type Sealer struct {
	purpose string
	keys    []key // keys[0] seals
}

// key is one secret's keys, derived for the Sealer's purpose.
type key struct {
	id   string      // names aead in version 2
	aead cipher.AEAD // AES-256-GCM, random nonce prepended
	id1  string      // names mac in version 1
	mac  []byte      // HMAC-SHA-256 key of version 1
}

// New returns a Sealer for purpose over secrets: the first seals, all of
// them open. Each secret must be at least MinSecret bytes.
func New(purpose string, secrets ...[]byte) (*Sealer, error) {
	if len(secrets) == 0 {
		return nil, ErrNoKey
	}
	if purpose == "" {
		return nil, errors.New("seal: no purpose")
	}
	s := &Sealer{purpose: purpose}
	for i, sec := range secrets {
		if len(sec) < MinSecret {
			return nil, fmt.Errorf("seal: secret %d is %d bytes; it must be at least %d", i+1, len(sec), MinSecret)
		}
		k, err := deriveKey(sec, purpose)
		if err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		s.keys = append(s.keys, k)
	}
	return s, nil
}

// deriveKey derives a secret's keys for purpose, each under its own label.
func deriveKey(secret []byte, purpose string) (key, error) {
	var k key
	enc, err := hkdf.Key(sha256.New, secret, nil, "conduit seal v2 aes-256-gcm: "+purpose, 32)
	if err != nil {
		return k, err
	}
	id, err := hkdf.Key(sha256.New, secret, nil, "conduit seal v2 key id: "+purpose, 6)
	if err != nil {
		return k, err
	}
	block, err := aes.NewCipher(enc)
	if err != nil {
		return k, err
	}
	if k.aead, err = cipher.NewGCMWithRandomNonce(block); err != nil {
		return k, err
	}
	k.id = hex.EncodeToString(id)
	// Version 1's key and id, to read its values.
	if k.mac, err = hkdf.Key(sha256.New, secret, nil, "conduit seal v1: "+purpose, 32); err != nil {
		return k, err
	}
	id1 := sha256.Sum256(k.mac)
	k.id1 = hex.EncodeToString(id1[:6])
	return k, nil
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
		return nil, ErrNoKey
	}
	return out, nil
}

// Seal returns payload encrypted and authenticated with the first key, in
// version 2. A non-zero expires makes Open refuse it from then on.
//
// The payload is not compressed first: compressing data that an attacker
// partly chooses, then encrypting it, leaks the rest through the length
// (CRIME).
func (s *Sealer) Seal(payload []byte, expires time.Time) string {
	exp := "0"
	if !expires.IsZero() {
		exp = strconv.FormatInt(expires.Unix(), 36)
	}
	k := s.keys[0]
	n := len(payload) + k.aead.Overhead()
	head := prefixV2 + "." + k.id + "." + exp + "." + strconv.Itoa(n)
	sealed := k.aead.Seal(make([]byte, 0, n), nil, payload, s.additional(head))
	return head + "." + base64.RawURLEncoding.EncodeToString(sealed)
}

// additional is the additional data of a value whose text before the
// sealed bytes is head: the purpose, then head (version, key id, expiry,
// length).
func (s *Sealer) additional(head string) []byte {
	return []byte("conduit seal\x00" + s.purpose + "\x00" + head)
}

// Open returns the payload of sealed when one of the keys sealed it for
// this purpose and it is unaltered, in version 2 or 1. Otherwise its
// error matches ErrExpired when the value is authentic and its expiry is
// not after now, else ErrInvalid and one of ErrUnknownKey, ErrAltered,
// ErrTruncated and ErrMalformed. Nothing of the payload is returned
// unless it is authentic.
func (s *Sealer) Open(sealed string, now time.Time) ([]byte, error) {
	version, _, dot := strings.Cut(sealed, ".")
	switch {
	case sealed == "":
		return nil, malformed("empty")
	case !dot && (strings.HasPrefix(prefixV2, sealed) || strings.HasPrefix(prefixV1, sealed)):
		return nil, ErrTruncated // "c", "cs", "cs2": cut before its first dot
	case version == prefixV2:
		return s.openV2(sealed, now)
	case version == prefixV1:
		return s.openV1(sealed, now)
	case len(version) > 2 && len(version) <= 6 && strings.HasPrefix(version, "cs"):
		if v, err := strconv.Atoi(version[2:]); err == nil {
			return nil, malformed(fmt.Sprintf("version %d; this release reads versions 1 and 2", v))
		}
	}
	return nil, malformed("no version prefix")
}

// openV2 opens a value of version 2.
func (s *Sealer) openV2(sealed string, now time.Time) ([]byte, error) {
	parts := strings.Split(sealed, ".")
	switch {
	case len(parts) < 5:
		return nil, ErrTruncated
	case len(parts) > 5:
		return nil, malformed("too many parts")
	}
	id, expText, nText, text := parts[1], parts[2], parts[3], parts[4]
	exp, err := parseExpiry(expText)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(nText)
	// The bound keeps the encoded length from overflowing.
	if err != nil || n < 0 || strconv.Itoa(n) != nText || n > 1<<48 {
		return nil, malformed("bad length")
	}
	switch want := base64.RawURLEncoding.EncodedLen(n); {
	case len(text) < want:
		return nil, ErrTruncated
	case len(text) > want:
		return nil, malformed("longer than its length")
	}
	data, err := b64.DecodeString(text)
	if err != nil {
		return nil, malformed("bad base64")
	}
	k := s.find(func(k *key) bool { return k.id == id })
	if k == nil {
		return nil, ErrUnknownKey
	}
	if n < k.aead.Overhead() {
		return nil, malformed("shorter than a nonce and a tag")
	}
	head := sealed[:len(sealed)-len(text)-1]
	payload, err := k.aead.Open(nil, nil, data, s.additional(head))
	if err != nil {
		return nil, ErrAltered
	}
	// Authentic from here on.
	if !exp.IsZero() && !now.Before(exp) {
		return nil, ErrExpired
	}
	return payload, nil
}

// openV1 opens a value of version 1, HMAC-signed.
func (s *Sealer) openV1(sealed string, now time.Time) ([]byte, error) {
	i := strings.LastIndexByte(sealed, '.')
	signed, macText := sealed[:i], sealed[i+1:]
	parts := strings.Split(signed, ".")
	switch {
	case len(parts) < 4:
		return nil, ErrTruncated
	case len(parts) > 4:
		return nil, malformed("too many parts")
	}
	want := base64.RawURLEncoding.EncodedLen(sha256.Size)
	switch {
	case len(macText) < want:
		return nil, ErrTruncated
	case len(macText) > want:
		return nil, malformed("mac too long")
	}
	mac, err := b64.DecodeString(macText)
	if err != nil {
		return nil, malformed("bad base64")
	}
	k := s.find(func(k *key) bool { return k.id1 == parts[1] })
	if k == nil {
		return nil, ErrUnknownKey
	}
	h := hmac.New(sha256.New, k.mac)
	h.Write([]byte(signed))
	if !hmac.Equal(mac, h.Sum(nil)) {
		return nil, ErrAltered
	}
	// Authentic from here on: what follows was written by a Seal.
	exp, err := parseExpiry(parts[2])
	if err != nil {
		return nil, err
	}
	if !exp.IsZero() && !now.Before(exp) {
		return nil, ErrExpired
	}
	payload, err := b64.DecodeString(parts[3])
	if err != nil {
		return nil, malformed("bad base64")
	}
	return payload, nil
}

// find returns the first key that match accepts, or nil.
func (s *Sealer) find(match func(*key) bool) *key {
	for i := range s.keys {
		if match(&s.keys[i]) {
			return &s.keys[i]
		}
	}
	return nil
}

// parseExpiry reads an expiry: "0" for none, else Unix seconds in base
// 36, in the one text Seal writes for them.
func parseExpiry(text string) (time.Time, error) {
	if text == "0" {
		return time.Time{}, nil
	}
	sec, err := strconv.ParseInt(text, 36, 64)
	if err != nil || strconv.FormatInt(sec, 36) != text {
		return time.Time{}, malformed("bad expiry")
	}
	return time.Unix(sec, 0), nil
}
