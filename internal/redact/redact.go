// Package redact is conduit's one way of taking a secret out of a text it
// shows: an error, a status line, a log. A secret reaches a message in
// more spellings than its own: quoted by %q, escaped in JSON, escaped in
// a URL, or cut by a URL's parser at a '/', '?' or '#'. Replace takes
// out each of them, so that every caller redacts the same forms.
package redact

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// MinLen is the length of the shortest value (or piece of one) that is
// redacted: shorter ones ("443", "true") would garble messages, and are
// no secrets worth the name.
const MinLen = 8

// Secret is a value to take out of a text, and what to write in its
// place.
type Secret struct{ Value, With string }

// String returns s with every form of each secret (see Forms) replaced
// by its With. Where forms overlap, the longest is taken out, so a secret
// that holds another goes whole. A value shorter than MinLen is left.
func String(s string, secrets ...Secret) string {
	if s == "" {
		return s
	}
	type form struct{ text, with string }
	var forms []form
	for _, sec := range secrets {
		if len(sec.Value) < MinLen {
			continue
		}
		for _, f := range Forms(sec.Value) {
			forms = append(forms, form{f, sec.With})
		}
	}
	if len(forms) == 0 {
		return s
	}
	// A Replacer tries its pairs in order at each position: longest first.
	slices.SortStableFunc(forms, func(a, b form) int { return cmp.Compare(len(b.text), len(a.text)) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f.text, f.with)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// Forms returns the spellings of value that a message can hold, longest
// first, each once:
//
//   - value itself;
//   - Go's quoting (%q, %+q);
//   - JSON's escaping, with and without HTML escaping. Also with \u
//     escapes for every non-ASCII character, as other languages write it.
//   - a URL's escaping (query, path, path segment, user info, fragment);
//   - what a URL's parser and printer make of it in a path, a query or a
//     fragment, split at a '?' or '#' (see inURL);
//   - each of these quoted or JSON-escaped once more. An error may quote
//     an error that quoted it.
//
// The same forms are added for pieces of value at least MinLen long. A
// piece lies between characters that end a URL's part ('/', '?', '#',
// '&', '=', '@', ':', ';', whitespace). A URL's parser splits a secret
// there, and prints the pieces apart.
func Forms(value string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, v := range append([]string{value}, pieces(value)...) {
		for _, f := range encodings(v) {
			add(f)
			add(quoted(f))
			add(jsonEscaped(f, true))
			add(jsonEscaped(f, false))
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// encodings are v's first-level forms.
func encodings(v string) []string {
	return []string{
		v,
		quoted(v),
		strings.Trim(fmt.Sprintf("%+q", v), `"`),
		jsonEscaped(v, true),
		jsonEscaped(v, false),
		asciiJSON(jsonEscaped(v, false)),
		url.QueryEscape(v),
		url.PathEscape(v),
		(&url.URL{Path: v}).EscapedPath(),
		strings.TrimSuffix(url.User(v).String(), "@"),
		strings.TrimPrefix(url.UserPassword("", v).String(), ":"),
		(&url.URL{Fragment: v}).EscapedFragment(),
		inURL("/", v),
		inURL("/?", v),
		inURL("/#", v),
	}
}

// inURL is v as a URL's String writes it after v was parsed in the part
// that at begins: a path ("/"), a query ("/?") or a fragment ("/#"). The
// parser moves what follows a '?' or '#' of v into the next part, which
// escapes it its own way; "" when the URL does not parse.
func inURL(at, v string) string {
	const base = "http://h"
	u, err := url.Parse(base + at + v)
	if err != nil {
		return ""
	}
	s, ok := strings.CutPrefix(u.String(), base+at)
	if !ok {
		return ""
	}
	return s
}

// quoted is v as %q writes it, without the quotes.
func quoted(v string) string {
	q := fmt.Sprintf("%q", v)
	return q[1 : len(q)-1]
}

// jsonEscaped is v as a JSON string, without the quotes.
func jsonEscaped(v string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// asciiJSON is a JSON string's text with every non-ASCII character as a
// \u escape (a UTF-16 surrogate pair above U+FFFF).
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// pieces are the parts of v at least MinLen long between the characters
// that end a URL's part; none when v has no such character.
func pieces(v string) []string {
	parts := strings.FieldsFunc(v, func(r rune) bool {
		return strings.ContainsRune("/?#&=@:;", r) || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	if len(parts) == 1 && parts[0] == v {
		return nil
	}
	return slices.DeleteFunc(parts, func(p string) bool { return len(p) < MinLen })
}

// Error returns err with its message passed through clean: err itself
// when clean changes nothing, else an error of the clean message that
// unwraps to err, so that errors.Is and errors.As still reach the cause.
func Error(err error, clean func(string) string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := clean(msg)
	if out == msg {
		return err
	}
	return &redactedError{msg: out, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Origin returns what an error may say of the URL raw: its scheme and
// host ("redis://cache.internal:6379"), or its scheme alone ("redis://")
// when the host is not plainly a host name, or "" without a scheme. It
// never returns any part of the user info. raw is not given to
// url.Parse, whose errors quote the whole URL, and which cuts a password
// at an unescaped '/', '?' or '#' and takes its start for the host. The
// user info ends at the last '@', as a password may hold one.
func Origin(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !validScheme(scheme) {
		return ""
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	if !plainHost(host) {
		return scheme + "://"
	}
	return scheme + "://" + host
}

// validScheme reports whether s is a URL's scheme (RFC 3986).
func validScheme(s string) bool {
	for i, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && ('0' <= r && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// plainHost reports whether h is a host name or IP address with an
// optional port: letters, digits, '.', '-' and ':' (an IPv6 address in
// brackets), with ':' only before a port of digits outside brackets.
func plainHost(h string) bool {
	if v6, ok := strings.CutPrefix(h, "["); ok {
		addr, port, ok := strings.Cut(v6, "]")
		if !ok || addr == "" || strings.Trim(addr, "0123456789abcdefABCDEF:.") != "" {
			return false
		}
		p, ok := strings.CutPrefix(port, ":")
		return port == "" || ok && p != "" && strings.Trim(p, "0123456789") == ""
	}
	name, port, hasPort := strings.Cut(h, ":")
	if hasPort && (port == "" || strings.Trim(port, "0123456789") != "") {
		return false
	}
	return name == "" && !hasPort || name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == ""
}

// Name returns a name to show in an error. A malformed one may be part of
// a literal secret (a value with a stray "${env:"), so only a short one of
// letters, digits and _ . - is shown; any other is "…".
func Name(name string) string {
	if len(name) > 16 || strings.ContainsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_.-", r))
	}) {
		return "…"
	}
	return name
}

// CredentialHeader reports whether a header's name says it carries
// credentials (Authorization, Cookie, X-API-Key...).
func CredentialHeader(k string) bool {
	k = strings.ToLower(k)
	switch k {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	return secretWord(k[strings.LastIndexAny(k, "-_")+1:])
}

// CredentialVar reports whether a variable's name says it holds a secret
// (GITHUB_TOKEN, OPENAI_API_KEY, DB_PASSWORD...).
func CredentialVar(k string) bool {
	k = strings.ToLower(k)
	return secretWord(k[strings.LastIndexAny(k, "-_")+1:])
}

// secretWord reports whether the last word of a header's or variable's
// name, in lower case, says it holds a secret.
func secretWord(w string) bool {
	switch w {
	case "token", "secret", "password", "passwd", "passphrase", "key", "apikey", "pat", "credentials":
		return true
	}
	return false
}

// Env returns err with each value of fromEnv (a configuration's ${env:NAME}
// values, by name) replaced by its ${env:NAME}, in every form (see String).
// errors.Is and errors.As still reach err.
func Env(err error, fromEnv map[string]string) error {
	if err == nil || len(fromEnv) == 0 {
		return err
	}
	secrets := make([]Secret, 0, len(fromEnv))
	for _, k := range slices.Sorted(maps.Keys(fromEnv)) {
		secrets = append(secrets, Secret{Value: fromEnv[k], With: "${env:" + k + "}"})
	}
	return Error(err, func(msg string) string { return String(msg, secrets...) })
}
