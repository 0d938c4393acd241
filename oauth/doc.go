// Package oauth authorizes conduit's connections to remote MCP servers
// with OAuth 2.1, as the MCP authorization specification says, so that
// servers such as Linear, Notion, Atlassian or Sentry can be used. It is
// built on the Go SDK's auth, auth/extauth and oauthex packages and on
// golang.org/x/oauth2; a conduit.Server's OAuth field is a [Config].
//
// On a server's 401, a [Handler] discovers its protected resource metadata
// (RFC 9728: from the WWW-Authenticate challenge, then the well-known
// paths), its authorization server's metadata (RFC 8414 and OpenID
// discovery, with the 2025-03-26 fallbacks), registers (a client ID
// metadata document, a client registered in advance, or dynamic
// registration, RFC 7591) and runs the configured [Grant]. A client
// registered dynamically is stored with its tokens (Record.
// RegisteredRedirect) and used again by later logins, step-ups and other
// processes with the same issuer and redirect URL; one whose login fails
// is forgotten, so the next login registers anew:
//
//   - the authorization code grant with PKCE S256 and the resource
//     indicator (RFC 8707), scopes chosen in the specification's order
//     (the challenge's, else the metadata's) plus Config.Scopes, and
//     offline_access where the server supports it. The SDK's
//     AuthorizationCodeHandler runs it for servers with protected resource
//     metadata; conduit runs it, from the same parts, for 2025-03-26
//     servers without any (see legacyMetadata for the one check that
//     differs). The interactive step is Config.Authorize: [Loopback] for a
//     browser on this machine, a web application's own redirect otherwise;
//   - client credentials (golang.org/x/oauth2/clientcredentials), with a
//     secret (client_secret_basic or client_secret_post) or a private key
//     (private_key_jwt, RFC 7523 assertions signed with
//     github.com/golang-jwt/jwt/v5), after the same discovery: metadata
//     that names another resource ends it, and every token request names
//     the resource (RFC 8707);
//   - cross-app access, now enterprise-managed authorization (SEP-990):
//     the user's ID token exchanged for an ID-JAG at the enterprise
//     identity provider (oauthex.ExchangeToken), and the ID-JAG for an
//     access token;
//   - workload identity federation (SEP-1933): the JWT bearer grant (RFC
//     7523 §2.1) with the token the workload's platform gives it, read
//     from Config.AssertionFile for every token request; an expired one is
//     not sent, and one refused is not sent again until it changes;
//   - token exchange on behalf of a user (RFC 8693, [GrantTokenExchange]):
//     the user's own access token (Config.SubjectToken) exchanged, through
//     the SDK's oauthex.ExchangeToken, for a token of the server's, when
//     its authorization server lists the grant; a user without a token
//     needs a login.
//
// Tokens may be a user's: Config.Principal keys them in the store
// (Key.Principal), as conduit does for each principal of a server of
// conduit.IdentityPrincipal, whose logins are [Login] with Principal set
// (conduit login --principal).
//
// Any grant may give sender-constrained tokens (DPoP, RFC 9449):
// Config.DPoP asks for them, and so does a server's DPoP challenge. The
// handler keeps an ES256 key (stored with the tokens) and signs, with
// github.com/go-jose/go-jose/v4, a proof for every token request and every
// request that carries a DPoP-bound token, honouring the nonces servers
// ask for (use_dpop_nonce) by asking again once. [Handler.Attach] puts the
// handler and its proofs on a transport. A token of a type conduit cannot
// present is refused rather than sent as a Bearer token.
//
// A 403 with insufficient_scope asks for the larger set of scopes (step-up),
// at most three times in ten minutes and never again for scopes already
// granted. Tokens are kept in a [TokenStore] ([FileStore], [MemoryStore]),
// refreshed before they expire and when the server refuses them, and a
// rotated refresh token is saved before the new access token is used. A
// server that needs a login that cannot be had (no Authorize callback, or
// a refused refresh token) fails with an error matching [ErrNeedsLogin],
// and conduit reports it as needing a login until new tokens are stored.
// So does one whose interactive step failed, timed out or was declined:
// the handler remembers that (the user is asked once, not on every 401)
// until new tokens come or [Handler.Retry]. The interactive step runs apart
// from the deadline of the request that needed it, bounded by
// Config.AuthorizeTimeout, and ends when that request is canceled or the
// handler closed.
//
// Security: PKCE always; the state of every authorization response is
// checked; the authorization server's issuer is checked (RFC 8414 §3.3
// and the response's iss, RFC 9207); tokens are stored and sent only for
// the resource they were issued for; endpoints off loopback must be HTTPS
// ([CheckEndpoint]); the loopback listener binds a loopback address, takes
// one answer and has a time limit; and no secret reaches an error message:
// every error a Handler returns has the tokens and secrets it knows
// removed.
package oauth
