package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// secret has each character that a form escapes: a quote, a backslash,
// URL delimiters, a percent sign, a newline, a tab, HTML's, non-ASCII
// letters and one above U+FFFF.
const secret = "s3cr3t\"quo\\te/sl#ash?q=1&%25pct\n\tnl-ünï-✓<b>&😀-end"

// Each way conduit's code writes a string, applied to the secret, is
// taken out; and so is each of them quoted again.
func TestStringEveryEncoding(t *testing.T) {
	u := &url.URL{Scheme: "https", Host: "h", Path: "/mcp/" + secret, RawQuery: "key=" + url.QueryEscape(secret), Fragment: secret}
	js, _ := json.Marshal(secret)
	jsq, _ := json.Marshal(strconv.Quote(secret))
	for name, text := range map[string]string{
		"raw":              "value " + secret + " end",
		"%q":               fmt.Sprintf("value %q end", secret),
		"%+q":              fmt.Sprintf("value %+q end", secret),
		"%#q":              fmt.Sprintf("value %#q end", secret),
		"json":             "value " + string(js) + " end",
		"json of %q":       "value " + string(jsq) + " end",
		"url":              "Get " + u.String() + ": refused",
		"url in %q":        fmt.Sprintf("Get %q: refused", u.String()),
		"url.Error":        (&url.Error{Op: "Get", URL: "https://h/" + secret, Err: errors.New("refused")}).Error(),
		"url.Parse":        parseErr(t, "https://h/mcp\n"+secret),
		"query":            "q=" + url.QueryEscape(secret),
		"path":             "p=" + url.PathEscape(secret),
		"userinfo":         (&url.URL{Scheme: "redis", User: url.UserPassword("u", secret), Host: "h"}).String(),
		"user":             (&url.URL{Scheme: "redis", User: url.User(secret), Host: "h"}).String(),
		"ascii json":       `{"v":"` + asciiJSON(jsonEscaped(secret, false)) + `"}`,
		"json, no html":    `{"v":"` + jsonEscaped(secret, false) + `"}`,
		"error of a child": fmt.Sprintf("server stderr: bad token %s\n", secret),
	} {
		got := String(text, Secret{Value: secret, With: "${env:K}"})
		for _, piece := range []string{"s3cr3t", "quo", "sl#ash", "pct", "nl-", "-end", "😀", "ünï", `\ud83d`} {
			if strings.Contains(got, piece) {
				t.Errorf("%s: %q left in %q", name, piece, got)
			}
		}
		if !strings.Contains(got, "${env:K}") {
			t.Errorf("%s: nothing replaced: %q", name, got)
		}
	}
}

func parseErr(t *testing.T, u string) string {
	t.Helper()
	_, err := url.Parse(u)
	if err == nil {
		t.Fatalf("url.Parse(%q) accepted it", u)
	}
	return err.Error()
}

// A short value is no secret worth garbling a message for; a secret that
// holds another is taken out whole; text around a secret is kept.
func TestStringBounds(t *testing.T) {
	if got := String("port 443 open", Secret{Value: "443", With: "X"}); got != "port 443 open" {
		t.Errorf("short value: %q", got)
	}
	long, short := "token-0123456789-suffix", "token-0123456789"
	got := String("a token-0123456789-suffix b token-0123456789 c", Secret{short, "[S]"}, Secret{long, "[L]"})
	if got != "a [L] b [S] c" {
		t.Errorf("nested: %q", got)
	}
	if got := String("nothing here", Secret{Value: secret, With: "X"}); got != "nothing here" {
		t.Errorf("clean text changed: %q", got)
	}
}

func TestError(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "/x/" + secret, Err: fs.ErrNotExist}
	clean := func(s string) string { return String(s, Secret{Value: secret, With: "[redacted]"}) }
	err := Error(fmt.Errorf("loading: %w", cause), clean)
	if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("message: %q", err)
	}
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) {
		t.Errorf("the cause is not reached: %#v", err)
	}
	plain := errors.New("nothing secret")
	if Error(plain, clean) != plain {
		t.Error("an error with nothing to take out is not returned as it is")
	}
	if Error(nil, clean) != nil {
		t.Error("nil is not nil")
	}
}

// Origin names the scheme and host, never the user info, even where
// url.Parse would take a password's start for the host.
func TestOrigin(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://cache.internal:6379/0":              "redis://cache.internal:6379",
		"redis://:pw@cache.internal:6379/0":          "redis://cache.internal:6379",
		"redis://:908172/Qj7kPx@cache.internal/0":    "redis://cache.internal",
		"redis://:ab#cd?ef@10.0.0.1:6379":            "redis://10.0.0.1:6379",
		"redis://u:p@ss@[::1]:6379/0":                "redis://[::1]:6379",
		"redis://:908172/Qj7kPx":                     "redis://",
		"redis://u:secret-without-at/0":              "redis://",
		"rediss://h\n:1":                             "rediss://",
		"unix://:pw@/run/redis.sock":                 "unix://",
		"mysql://root:s3cret@db.internal/x":          "mysql://db.internal",
		"no scheme at all":                           "",
		":908172/Qj7kPx@cache.internal":              "",
		"redis://:pw@[::1/0":                         "redis://",
		"redis://:pw@cache.internal:63x9":            "redis://",
		"sqlite:///var/lib/conduit/state.db":         "sqlite://",
		"redis://:Zq/#?@%zz\"\\\nü9x@cache.internal": "redis://cache.internal",
	} {
		if got := Origin(raw); got != want {
			t.Errorf("Origin(%q) = %q, want %q", raw, got, want)
		}
	}
}

// FuzzOrigin: what Origin says of a URL does not depend on its user info,
// whatever the user info holds, and is a prefix of scheme and host.
func FuzzOrigin(f *testing.F) {
	f.Add("redis", ":908172/Qj7kPx", "cache.internal:6379/0")
	f.Add("unix", "u:p#q?r", "/run/redis.sock")
	f.Add("rediss", "", "[::1]:6380")
	f.Add("x", "a@b@c", "h")
	f.Fuzz(func(t *testing.T, scheme, info, rest string) {
		if strings.Contains(rest, "@") {
			return // the user info ends at the last '@'
		}
		got := Origin(scheme + "://" + info + "@" + rest)
		if want := Origin(scheme + "://X@" + rest); got != want {
			t.Fatalf("Origin depends on the user info %q: %q, not %q", info, got, want)
		}
		if got != "" && !strings.HasPrefix(got, scheme+"://") {
			t.Fatalf("Origin(%q://...) = %q", scheme, got)
		}
	})
}

// FuzzString: a secret written in a message by any of the ways conduit
// writes strings is gone from the message after String.
func FuzzString(f *testing.F) {
	f.Add(secret, "before ", " after")
	f.Add("p@ss/w#rd?x=1", "Get \"https://h/", "\": refused")
	f.Add("ünï\x00\xff-0123", "", "")
	f.Fuzz(func(t *testing.T, value, before, after string) {
		if len(value) < MinLen || strings.Contains(before+after, value) {
			return
		}
		js, _ := json.Marshal(value)
		for _, text := range []string{
			before + value + after,
			before + strconv.Quote(value) + after,
			before + string(js) + after,
			before + url.QueryEscape(value) + after,
			before + (&url.URL{Scheme: "https", Host: "h", Path: "/" + value}).String() + after,
		} {
			got := String(text, Secret{Value: value, With: "\x01"})
			if strings.Contains(got, value) {
				t.Fatalf("String(%q) left the value: %q", text, got)
			}
		}
	})
}
