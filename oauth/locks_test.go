package oauth_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/conduitmcp/conduit/store"
)

// The variables of a child process of this test binary that refreshes
// the tokens of a FileStore (TestRefreshAcrossProcesses).
const (
	childEnv    = "CONDUIT_OAUTH_TEST_CHILD"
	childDir    = "CONDUIT_OAUTH_TEST_DIR"
	childURL    = "CONDUIT_OAUTH_TEST_URL"
	childStart  = "CONDUIT_OAUTH_TEST_START"
	childTokens = "refresh"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == childTokens {
		os.Exit(refreshChild())
	}
	os.Exit(m.Run())
}

// refreshChild gets the current access token of server "srv" from the
// FileStore in $CONDUIT_OAUTH_TEST_DIR, at the instant
// $CONDUIT_OAUTH_TEST_START (Unix nanoseconds), and prints it.
func refreshChild() int {
	h, err := oauth.NewHandler("srv", os.Getenv(childURL), &oauth.Config{Store: &oauth.FileStore{Dir: os.Getenv(childDir)}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, err := h.TokenSource(ctx)
	if err != nil || ts == nil {
		fmt.Fprintln(os.Stderr, "no token source:", err)
		return 1
	}
	start, _ := strconv.ParseInt(os.Getenv(childStart), 10, 64)
	time.Sleep(time.Until(time.Unix(0, start)))
	tok, err := ts.Token()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(tok.AccessToken)
	return 0
}

// expire makes the stored tokens of key expired, as they are once their
// lifetime has passed.
func expire(t *testing.T, s oauth.TokenStore, key oauth.Key) string {
	t.Helper()
	rec, err := s.Load(context.Background(), key)
	if err != nil || rec == nil {
		t.Fatalf("stored: %v, %v", rec, err)
	}
	rec.Token.Expiry = time.Now().Add(-time.Minute)
	if err := s.Save(context.Background(), key, rec); err != nil {
		t.Fatal(err)
	}
	return rec.Token.AccessToken
}

// refreshes counts the refresh grants the authorization server was sent.
func refreshes(as *oauthtest.Server) int {
	n := 0
	for _, f := range as.Snapshot().Token {
		if f.Get("grant_type") == "refresh_token" {
			n++
		}
	}
	return n
}

// TestRefreshAcrossProcesses: processes that share a FileStore and find
// its tokens expired at the same instant refresh them once: one holds
// the lock file and refreshes, the others wait, read the store again and
// take what it saved. Without the lock they would all send the same
// refresh token, which the server rotates: all but one refused.
func TestRefreshAcrossProcesses(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{TokenDelay: 200 * time.Millisecond})
	dir := t.TempDir()
	fs := &oauth.FileStore{Dir: dir}
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: fs, Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	old := expire(t, fs, oauth.Key{Server: "srv"})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	start := strconv.FormatInt(time.Now().Add(500*time.Millisecond).UnixNano(), 10)
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), childEnv+"="+childTokens, childDir+"="+dir, childURL+"="+as.MCPURL(), childStart+"="+start)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				outs[i] = fmt.Sprintf("failed: %v: %s", err, stderr.String())
				return
			}
			outs[i] = strings.TrimSpace(stdout.String())
		})
	}
	wg.Wait()
	for i, out := range outs {
		if out == "" || out == old || strings.HasPrefix(out, "failed") || out != outs[0] {
			t.Errorf("process %d: %q; want the one new access token all got", i, out)
		}
	}
	if got := refreshes(as); got != 1 {
		t.Errorf("%d refreshes, want 1", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "srv.json.lock")); err != nil {
		t.Errorf("the lock file: %v", err)
	}
}

// TestRefreshUnderStoreLocker: handlers that share a token store with no
// lock of its own, and a StoreLocker on a store.Locks (as conduit gives
// the replicas of conduit serve on their shared store), refresh once
// between them; a lock that cannot be had fails the refresh, saying so,
// and sends nothing.
func TestRefreshUnderStoreLocker(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{TokenDelay: 100 * time.Millisecond})
	tokens := &oauth.MemoryStore{}
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: tokens, Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	old := expire(t, tokens, oauth.Key{Server: "srv"})
	locks := store.NewMemory()
	defer locks.Close()
	got := make([]string, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			h, err := oauth.NewHandler("srv", as.MCPURL(), &oauth.Config{Store: tokens, Locker: oauth.StoreLocker(locks)})
			if err != nil {
				got[i] = err.Error()
				return
			}
			ts, err := h.TokenSource(context.Background())
			if err != nil || ts == nil {
				got[i] = fmt.Sprint("no token source: ", err)
				return
			}
			tok, err := ts.Token()
			if err != nil {
				got[i] = err.Error()
				return
			}
			got[i] = tok.AccessToken
		})
	}
	wg.Wait()
	if slices.Contains(got, old) || slices.Compact(slices.Clone(got))[0] != got[0] || len(slices.Compact(slices.Clone(got))) != 1 {
		t.Errorf("access tokens %q, want one new one for all", got)
	}
	if n := refreshes(as); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}

	// A locker that cannot lock: no refresh is sent.
	expire(t, tokens, oauth.Key{Server: "srv"})
	before := refreshes(as)
	h, err := oauth.NewHandler("srv", as.MCPURL(), &oauth.Config{Store: tokens, Locker: failingLocker{}})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h.TokenSource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Token(); err == nil || !strings.Contains(err.Error(), "cannot be locked for a refresh") {
		t.Errorf("refresh without its lock: %v", err)
	}
	if refreshes(as) != before {
		t.Error("a refresh was sent without its lock")
	}
}

type failingLocker struct{}

func (failingLocker) LockTokens(context.Context, oauth.Key) (func(), error) {
	return nil, fmt.Errorf("lock: %w", store.ErrUnavailable)
}
