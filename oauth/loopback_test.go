package oauth_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

func TestLoopbackBindsLoopbackOnly(t *testing.T) {
	for _, u := range []string{"http://0.0.0.0/cb", "http://example.com/cb", "https://127.0.0.1/cb", "http://10.1.2.3/cb"} {
		if l, err := oauth.NewLoopback(u, nil); err == nil {
			l.Close()
			t.Errorf("NewLoopback(%q) listened", u)
		}
	}
	l, err := oauth.NewLoopback("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	u, _ := url.Parse(l.RedirectURL())
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() || u.Port() == "0" || u.Path != "/callback" {
		t.Fatalf("redirect URL %s", l.RedirectURL())
	}
}

// browser follows the authorization URL with a real HTTP client, which
// lands on the loopback listener as a browser would.
func browser(t *testing.T, got chan<- *http.Response) func(string) error {
	return func(authURL string) error {
		go func() {
			resp, err := http.Get(authURL)
			if err != nil {
				t.Errorf("browser: %v", err)
				got <- nil
				return
			}
			resp.Body.Close()
			got <- resp
		}()
		return nil
	}
}

func TestLoopbackLogin(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	pages := make(chan *http.Response, 1)
	var shown string
	l, err := oauth.NewLoopback("", &oauth.LoopbackOptions{Show: func(u string) { shown = u }, Open: browser(t, pages)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	store := &oauth.MemoryStore{}
	asked, err := oauth.Login(ctxT(t), "srv", as.MCPURL(), &oauth.Config{Store: store, RedirectURL: l.RedirectURL(), Authorize: l.Authorize})
	if err != nil || !asked {
		t.Fatalf("Login = %v, %v", asked, err)
	}
	if !strings.HasPrefix(shown, as.URL+"/authorize?") {
		t.Errorf("shown %q", shown)
	}
	if resp := <-pages; resp == nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the browser got %v", resp)
	}
	if rec, _ := store.Load(ctxT(t), oauth.Key{Server: "srv"}); rec == nil {
		t.Fatal("Login stored nothing")
	}
	// The one answer was given: a replayed redirect finds nothing.
	q := as.Snapshot().Authorize[0]
	if _, err := http.Get(q.Get("redirect_uri") + "?code=x&state=" + q.Get("state")); err == nil {
		t.Error("the listener still answers after its login")
	}
}

func TestLoopbackAnswersOnceAndChecksState(t *testing.T) {
	l, err := oauth.NewLoopback("http://127.0.0.1/cb", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		_, err := l.Authorize(context.Background(), &auth.AuthorizationArgs{URL: "https://as.example/authorize?state=right"})
		done <- err
	}()
	// The first answer, with the wrong state, ends the authorization.
	var resp *http.Response
	for range 100 {
		if resp, err = http.Get(l.RedirectURL() + "?code=c&state=wrong"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // the listener is bound; Authorize starts serving it
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("wrong state answered %d", resp.StatusCode)
	}
	if err := <-done; !errors.Is(err, oauth.ErrStateMismatch) {
		t.Fatalf("Authorize = %v, want ErrStateMismatch", err)
	}
}

func TestLoopbackTimeLimit(t *testing.T) {
	l, err := oauth.NewLoopback("", &oauth.LoopbackOptions{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Authorize(context.Background(), &auth.AuthorizationArgs{URL: "https://as.example/authorize?state=s"})
	if !errors.Is(err, oauth.ErrLoginTimeout) {
		t.Fatalf("Authorize = %v, want ErrLoginTimeout", err)
	}
	if _, err := http.Get(l.RedirectURL() + "?code=c&state=s"); err == nil {
		t.Error("the listener still answers after its time limit")
	}
}
