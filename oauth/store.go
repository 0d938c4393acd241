package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit/internal/atomicfile"
	"golang.org/x/oauth2"
)

// Key names the tokens of one server in a [TokenStore]. Principal is ""
// for tokens that every caller of a hub shares, and a principal's id for
// that principal's own (a server of conduit.IdentityPrincipal, and a
// Login with Config.Principal set).
type Key struct {
	Server    string
	Principal string
}

// Record is what a [TokenStore] keeps for one server: the tokens and what
// refreshing them needs. It holds secrets; its String method redacts them,
// and nothing in conduit logs it.
type Record struct {
	// Resource is the MCP endpoint the tokens were issued for (RFC 8707).
	// Tokens are only ever sent to that URL: a record whose Resource is not
	// the server's URL is ignored.
	Resource string `json:"resource"`
	// Indicator is the resource indicator (RFC 8707) the tokens were asked
	// for, and which a refresh names again: Resource, or the URL that the
	// server's protected resource metadata names as the resource (its
	// origin, for metadata at the root). "" means Resource.
	Indicator string `json:"indicator,omitempty"`
	// Issuer is the authorization server that issued them.
	Issuer string `json:"issuer,omitempty"`
	// ClientID and ClientSecret are the client that got the tokens, which
	// may have been registered dynamically (RFC 7591).
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// TokenURL and AuthStyle say how to refresh.
	TokenURL  string           `json:"token_url,omitempty"`
	AuthStyle oauth2.AuthStyle `json:"auth_style,omitempty"`
	// RegisteredRedirect is set when ClientID was registered dynamically
	// (RFC 7591): the redirect URL it was registered with. A later login
	// with the same issuer and redirect URL uses that client rather than
	// registering another.
	RegisteredRedirect string `json:"registered_redirect,omitempty"`
	// Scopes are the scopes that were asked for.
	Scopes []string `json:"scopes,omitempty"`
	// Token is the access token, its expiry and the refresh token.
	Token *oauth2.Token `json:"token"`
	// DPoPKey is the private key (a JWK) that Token is bound to, when it
	// is a DPoP token (RFC 9449): the token, and a refresh token bound to
	// it, are useless without it.
	DPoPKey string `json:"dpop_key,omitempty"`
}

// indicator is the resource parameter of the record's token requests.
func (r *Record) indicator() string {
	if r.Indicator != "" {
		return r.Indicator
	}
	return r.Resource
}

// String describes the record without its secrets.
func (r *Record) String() string {
	if r == nil {
		return "<nil>"
	}
	refresh := "no"
	if r.Token != nil && r.Token.RefreshToken != "" {
		refresh = "yes"
	}
	expiry := "none"
	if r.Token != nil && !r.Token.Expiry.IsZero() {
		expiry = r.Token.Expiry.UTC().Format("2006-01-02T15:04:05Z")
	}
	return fmt.Sprintf("oauth.Record{Resource: %q, Issuer: %q, ClientID: %q, Scopes: %q, Expiry: %s, Refresh: %s, secrets redacted}",
		r.Resource, r.Issuer, r.ClientID, r.Scopes, expiry, refresh)
}

// GoString is String, so that %#v redacts too.
func (r *Record) GoString() string { return r.String() }

// TokenStore keeps tokens between connections and between processes.
// Load returns (nil, nil) when there is no record for key. Implementations
// must be safe for concurrent use.
type TokenStore interface {
	Load(ctx context.Context, key Key) (*Record, error)
	Save(ctx context.Context, key Key, rec *Record) error
	Delete(ctx context.Context, key Key) error
}

// MemoryStore is a [TokenStore] that keeps records in memory, for the life
// of the process. The zero value is ready to use.
type MemoryStore struct {
	mu   sync.Mutex
	recs map[Key][]byte
}

var _ TokenStore = (*MemoryStore)(nil)

// Load returns a copy of the record saved for key.
func (s *MemoryStore) Load(_ context.Context, key Key) (*Record, error) {
	s.mu.Lock()
	data, ok := s.recs[key]
	s.mu.Unlock()
	if !ok {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Save keeps a copy of rec.
func (s *MemoryStore) Save(_ context.Context, key Key, rec *Record) error {
	if rec == nil {
		return errors.New("oauth: nil record")
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recs == nil {
		s.recs = map[Key][]byte{}
	}
	s.recs[key] = data
	return nil
}

// Delete forgets the record of key.
func (s *MemoryStore) Delete(_ context.Context, key Key) error {
	s.mu.Lock()
	delete(s.recs, key)
	s.mu.Unlock()
	return nil
}

// FileStore is a [TokenStore] that keeps one JSON file per key in a
// directory. The directory is made with mode 0700 (and narrowed to it when
// it is wider); each file is written with mode 0600 to a temporary file in
// the same directory, synced and renamed over the old one, so a reader
// never sees half a file and a crash never loses the previous tokens. A
// file that others can read or write is refused rather than used.
type FileStore struct {
	// Dir is the directory; see [DefaultDir].
	Dir string
}

var _ TokenStore = (*FileStore)(nil)

// DefaultDir is where conduit keeps tokens: conduit/oauth under the user's
// configuration directory (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config
// on Linux).
func DefaultDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("oauth: no directory for tokens: %w", err)
	}
	return filepath.Join(dir, "conduit", "oauth"), nil
}

// path returns the file of key. Server ids are [A-Za-z0-9_-]; a principal
// may be anything, so it is encoded.
func (s *FileStore) path(key Key) (string, error) {
	if s.Dir == "" {
		return "", errors.New("oauth: FileStore has no Dir")
	}
	if key.Server == "" || strings.ContainsAny(key.Server, `/\.`+"\x00") {
		return "", fmt.Errorf("oauth: %q is not a server id a token file can be named after", key.Server)
	}
	name := key.Server
	if key.Principal != "" {
		name += "@" + base64.RawURLEncoding.EncodeToString([]byte(key.Principal))
	}
	return filepath.Join(s.Dir, name+".json"), nil
}

// Load reads the record of key.
func (s *FileStore) Load(_ context.Context, key Key) (*Record, error) {
	path, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("oauth: token file %s has mode %04o, open to other users: run chmod 600 on it, or log in again", path, perm)
	}
	var r Record
	dec := json.NewDecoder(f)
	if err := dec.Decode(&r); err != nil {
		// The decoder's message quotes no input, so no secret leaks here.
		return nil, fmt.Errorf("oauth: token file %s is not a token record (%v): log in again", path, err)
	}
	return &r, nil
}

// Save writes the record of key atomically.
func (s *FileStore) Save(_ context.Context, key Key, rec *Record) error {
	if rec == nil {
		return errors.New("oauth: nil record")
	}
	path, err := s.path(key)
	if err != nil {
		return err
	}
	if err := s.ensureDir(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	// 0600, from the first byte on: the temporary file is never readable
	// by others either.
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	return nil
}

// Delete removes the file of key; a missing file is not an error.
func (s *FileStore) Delete(_ context.Context, key Key) error {
	path, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("oauth: %w", err)
	}
	return nil
}

func (s *FileStore) ensureDir() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	fi, err := os.Stat(s.Dir)
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(s.Dir, 0o700); err != nil {
			return fmt.Errorf("oauth: token directory %s is open to other users and cannot be narrowed: %w", s.Dir, err)
		}
	}
	return nil
}
