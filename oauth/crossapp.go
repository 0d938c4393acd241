package oauth

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// grantJWTBearer is the grant type of RFC 7523 §2.1.
const grantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// crossApp runs enterprise-managed authorization (SEP-990): the user's ID
// token is exchanged at the identity provider for an ID-JAG whose audience
// is the server's authorization server (RFC 8693, through the SDK's
// oauthex.ExchangeToken), and the ID-JAG at that authorization server for
// an access token (RFC 7523). The SDK's extauth.EnterpriseHandler does the
// same, but discovers the identity provider with the PKCE requirement of
// an authorization server and always sends the client secret in the form,
// where authorization servers may require client_secret_basic.
func (h *Handler) crossApp(ctx context.Context, cs []oauthex.Challenge) error {
	idp := h.cfg.IdP
	asm, prm, resource, err := h.discover(ctx, cs)
	if err != nil {
		return err
	}
	if err := CheckEndpoint("the token endpoint", asm.TokenEndpoint); err != nil {
		return err
	}
	idpToken := idp.TokenEndpoint
	if idpToken == "" {
		meta, err := auth.GetAuthServerMetadata(ctx, idp.Issuer, h.hc)
		if err != nil {
			return fmt.Errorf("oauth: the metadata of identity provider %s: %w", idp.Issuer, err)
		}
		if meta == nil {
			return fmt.Errorf("oauth: identity provider %s publishes no metadata: configure its token endpoint", idp.Issuer)
		}
		idpToken = meta.TokenEndpoint
	}
	if err := CheckEndpoint("the identity provider's token endpoint", idpToken); err != nil {
		return err
	}
	var idToken string
	if idp.IDToken != nil {
		if idToken, err = idp.IDToken(ctx); err != nil {
			return fmt.Errorf("oauth: getting the user's ID token: %w", err)
		}
	} else if idToken, err = h.cfg.value("", idp.IDTokenEnv, "ID token", true); err != nil {
		return err
	}
	idpID, err := h.cfg.value(idp.ClientID, idp.ClientIDEnv, "identity provider client id", true)
	if err != nil {
		return err
	}
	idpSecret, err := h.cfg.value(idp.ClientSecret, idp.ClientSecretEnv, "identity provider client secret", idp.ClientSecretEnv != "")
	if err != nil {
		return err
	}
	id, secret, err := h.credentials()
	if err != nil {
		return err
	}
	h.red.add(idToken, idpSecret)
	creds := &oauthex.ClientCredentials{ClientID: idpID}
	if idpSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: idpSecret}
	}
	scopes := union(h.serverScopes(cs, prm), h.cfg.Scopes)
	jag, err := oauthex.ExchangeToken(ctx, idpToken, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience:           asm.Issuer,
		Resource:           resource,
		Scope:              scopes,
		SubjectToken:       idToken,
		SubjectTokenType:   oauthex.TokenTypeIDToken,
	}, creds, h.hc)
	if err != nil {
		return fmt.Errorf("oauth: exchanging the ID token at %s: %w", idpToken, err)
	}
	h.red.add(jag.AccessToken)
	oc := &oauth2.Config{ClientID: id, ClientSecret: secret,
		Endpoint: oauth2.Endpoint{TokenURL: asm.TokenEndpoint, AuthStyle: authStyle(asm.TokenEndpointAuthMethodsSupported)}}
	opts := []oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("grant_type", grantJWTBearer),
		oauth2.SetAuthURLParam("assertion", jag.AccessToken),
	}
	if len(scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, " ")))
	}
	tok, err := oc.Exchange(context.WithValue(ctx, oauth2.HTTPClient, h.hc), "", opts...)
	if err != nil {
		return fmt.Errorf("oauth: exchanging the ID-JAG at %s: %w", asm.TokenEndpoint, err)
	}
	// No refresh: when the token expires, the next 401 runs the exchange
	// again with a current ID token.
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	h.red.add(tok.AccessToken, tok.RefreshToken)
	h.ts = &tokenSource{h: h, base: oauth2.StaticTokenSource(tok), static: true,
		rec: Record{Resource: h.endpoint, Issuer: asm.Issuer, ClientID: id, Token: tok}, saved: tok.AccessToken}
	h.dead = ""
	h.loaded = true
	h.signalLocked()
	return nil
}
