package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/conduitmcp/conduit/oauth"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// The "oauth" object of an mcpServers entry: secrets are named by
// environment variable, never written in the file.
func ExampleParseConfig() {
	cfg, err := oauth.ParseConfig([]byte(`{"clientId": "conduit", "clientSecretEnv": "LINEAR_SECRET", "scopes": ["read"]}`), "https://mcp.linear.app/mcp")
	fmt.Println(cfg, err)
	_, err = oauth.ParseConfig([]byte(`{"clientSecret": "s3cr3t"}`), "https://mcp.linear.app/mcp")
	fmt.Println(err)
	// Output:
	// oauth.Config{Grant: authorization_code, ClientID: "conduit", ClientSecretEnv: "LINEAR_SECRET"} <nil>
	// "clientSecret" holds a secret, which a configuration file must not: use clientSecretEnv
}

// A file store keeps one 0600 file per server in a 0700 directory.
func ExampleFileStore() {
	dir, _ := os.MkdirTemp("", "tokens")
	defer os.RemoveAll(dir)
	store := &oauth.FileStore{Dir: filepath.Join(dir, "oauth")}
	ctx := context.Background()
	key := oauth.Key{Server: "linear"}
	store.Save(ctx, key, &oauth.Record{Resource: "https://mcp.linear.app/mcp", Token: &oauth2.Token{AccessToken: "a", RefreshToken: "r"}})
	rec, _ := store.Load(ctx, key)
	fi, _ := os.Stat(filepath.Join(dir, "oauth", "linear.json"))
	fmt.Println(rec.Resource, fi.Mode().Perm())
	// Output: https://mcp.linear.app/mcp -rw-------
}

// A program on the user's machine logs in with a browser and a loopback
// redirect; the tokens land in the store, where every later connection
// finds them.
func ExampleLogin() {
	lb, err := oauth.NewLoopback("", &oauth.LoopbackOptions{Show: func(u string) { fmt.Println("open", u) }})
	if err != nil {
		panic(err)
	}
	defer lb.Close()
	dir, _ := oauth.DefaultDir()
	cfg := &oauth.Config{Store: &oauth.FileStore{Dir: dir}, RedirectURL: lb.RedirectURL(), Authorize: lb.Authorize}
	if _, err := oauth.Login(context.Background(), "linear", "https://mcp.linear.app/mcp", cfg); err != nil {
		fmt.Println(err)
	}
}

// Workload identity federation: the workload's token, as Kubernetes
// projects one, is the assertion of the JWT bearer grant; tokens are
// sender-constrained with DPoP. Nobody logs in.
func ExampleParseConfig_workloadIdentity() {
	cfg, err := oauth.ParseConfig([]byte(`{"grant": "jwt_bearer", "clientId": "deploy-agent",
		"assertionFile": "/var/run/secrets/tokens/mcp", "dpop": true}`), "https://deploy.example.com/mcp")
	fmt.Println(cfg, cfg.DPoP, err)
	// Output:
	// oauth.Config{Grant: jwt_bearer, ClientID: "deploy-agent", AssertionFile: "/var/run/secrets/tokens/mcp"} true <nil>
}

// A program that opens its own MCP sessions puts a handler on their
// transport: the handler answers the server's 401s, and adds the DPoP
// proofs of a DPoP-bound token to the requests that carry it.
func ExampleHandler_Attach() {
	h, err := oauth.NewHandler("linear", "https://mcp.linear.app/mcp", &oauth.Config{DPoP: true})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	t := &mcp.StreamableClientTransport{Endpoint: "https://mcp.linear.app/mcp"}
	h.Attach(t)
	fmt.Println(t.OAuthHandler == h, t.HTTPClient != nil)
	// Output: true true
}

// On behalf of a user: a gateway exchanges the user's own token for one
// of the server's (RFC 8693) as the client it is registered as; conduit
// gives each principal's session the principal's token
// (conduit.Options.SubjectToken).
func ExampleParseConfig_tokenExchange() {
	cfg, err := oauth.ParseConfig([]byte(`{"grant": "token_exchange", "clientId": "conduit-gateway",
		"clientSecretEnv": "CRM_CLIENT_SECRET"}`), "https://crm.example.com/mcp")
	fmt.Println(cfg, err)
	// Output:
	// oauth.Config{Grant: token_exchange, ClientID: "conduit-gateway", ClientSecretEnv: "CRM_CLIENT_SECRET"} <nil>
}

// Replicas that share their tokens (a Store of their own on a shared
// database) refresh each token under a lock of the store they share, so
// that a refresh token that rotates is spent once; conduit gives every
// handler one on Options.Store.
func ExampleStoreLocker() {
	shared := store.NewMemory() // redisstore.Open("redis://...") across replicas
	locker := oauth.StoreLocker(shared)
	ctx := context.Background()
	key := oauth.Key{Server: "linear", Principal: "alice"}
	unlock, err := locker.LockTokens(ctx, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Another process's LockTokens of the same key waits here.
	wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = locker.LockTokens(wait, key)
	fmt.Println("second holder:", errors.Is(err, context.DeadlineExceeded))
	unlock()
	unlock2, err := locker.LockTokens(ctx, key)
	fmt.Println("after unlock:", err)
	unlock2()
	// Output:
	// second holder: true
	// after unlock: <nil>
}
