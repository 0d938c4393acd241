// Package oauth authorizes conduit's connections to remote MCP servers
// with OAuth 2.1, as the MCP authorization specification says. Servers
// such as Linear, Notion, Atlassian or Sentry need it. It is built on the
// Go SDK's auth, auth/extauth and oauthex packages and on
// golang.org/x/oauth2. A conduit.Server's OAuth field is a [Config].
//
// On a server's 401, a [Handler] runs discovery, registration and a grant.
// It finds the protected resource metadata (RFC 9728): from the
// WWW-Authenticate challenge, then the well-known paths. It finds the
// authorization server's metadata (RFC 8414 and OpenID discovery, with
// the 2025-03-26 fallbacks). It registers with a client ID metadata
// document, a client registered in advance, or dynamic registration
// (RFC 7591). Then it runs the configured [Grant]. A client registered
// dynamically is stored with its tokens (Record.RegisteredRedirect). Later
// logins, step-ups and other processes with the same issuer and redirect
// URL use it again. One whose login fails is forgotten, so the next login
// registers anew. The grants:
//
//   - The authorization code grant with PKCE S256 and the resource
//     indicator (RFC 8707). Scopes come in the specification's order (the
//     challenge's, else the metadata's), plus Config.Scopes, and
//     offline_access where the server supports it. The SDK's
//     AuthorizationCodeHandler runs it for servers with protected resource
//     metadata. conduit runs it, from the same parts, for 2025-03-26
//     servers without any (legacyMetadata holds the one check that
//     differs). The interactive step is Config.Authorize: [Loopback] for a
//     browser on this machine, or a web application's own redirect.
//   - Client credentials (golang.org/x/oauth2/clientcredentials). It uses
//     a secret (client_secret_basic or client_secret_post) or a private
//     key (private_key_jwt, RFC 7523, signed with
//     github.com/golang-jwt/jwt/v5). Discovery is the same. Metadata that
//     names another resource ends it. Every token request names the
//     resource (RFC 8707).
//   - Enterprise-managed authorization, once cross-app access (SEP-990).
//     The user's ID token becomes an ID-JAG at the enterprise identity
//     provider (oauthex.ExchangeToken). The ID-JAG becomes an access token.
//   - Workload identity federation (SEP-1933): the JWT bearer grant
//     (RFC 7523 §2.1). The assertion is the token the workload's platform
//     gives it, read from Config.AssertionFile for every token request. An
//     expired one is not sent. One refused is not sent again until it
//     changes.
//   - Token exchange on behalf of a user (RFC 8693, [GrantTokenExchange]).
//     The user's own access token (Config.SubjectToken) is exchanged for a
//     token of the server's, through the SDK's oauthex.ExchangeToken. Its
//     authorization server must list the grant. A user without a token
//     needs a login.
//
// Tokens may be a user's. Config.Principal keys them in the store
// (Key.Principal). conduit does so for each principal of a server of
// conduit.IdentityPrincipal. Their logins are [Login] with Principal set
// (conduit login --principal).
//
// Any grant may give sender-constrained tokens (DPoP, RFC 9449).
// Config.DPoP asks for them, and so does a server's DPoP challenge. The
// handler keeps an ES256 key, stored with the tokens. It signs a proof
// with github.com/go-jose/go-jose/v4 for every token request. It does the
// same for every request that carries a DPoP-bound token. A server that
// asks for a nonce (use_dpop_nonce) is asked again once. [Handler.Attach]
// puts the handler and its proofs on a transport. A token of a type
// conduit cannot present is refused, never sent as a Bearer token.
//
// A 403 with insufficient_scope asks for the larger set of scopes
// (step-up). That happens at most three times in ten minutes, never again
// for scopes already granted. Tokens are kept in a [TokenStore]
// ([FileStore], [MemoryStore]). They are refreshed before they expire and
// when the server refuses them. A rotated refresh token is saved before
// the new access token is used.
//
// Some servers need a login that cannot be had: no Authorize callback, or
// a refused refresh token. They fail with an error matching
// [ErrNeedsLogin]. conduit reports them as needing a login until new
// tokens are stored. So does a server whose interactive step failed, timed
// out or was declined. The handler remembers that, so the user is asked
// once, not on every 401. It forgets when new tokens come or on
// [Handler.Retry]. The interactive step ignores the deadline of the
// request that needed it. Config.AuthorizeTimeout bounds it instead. It
// ends when that request is canceled or the handler closed.
//
// Security:
//   - PKCE always.
//   - The state of every authorization response is checked.
//   - The authorization server's issuer is checked (RFC 8414 §3.3, and
//     the response's iss, RFC 9207).
//   - Tokens are stored and sent only for the resource they were issued
//     for.
//   - Endpoints off loopback must be HTTPS ([CheckEndpoint]).
//   - The loopback listener binds a loopback address, takes one answer and
//     has a time limit.
//   - No secret reaches an error message. Every error a Handler returns
//     has the tokens and secrets it knows removed.
package oauth
