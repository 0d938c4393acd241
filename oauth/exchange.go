package oauth

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Token exchange on behalf of a user (RFC 8693 §2): the user's own access
// token, which a gateway in front of conduit verified, is exchanged at the
// server's authorization server for a token of the server's, so that the
// server sees that user, never the gateway's own identity.

// The token types of RFC 8693 §3 that an exchange on behalf of a user
// sends and takes.
const (
	tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
)

// tokenExchange runs the token exchange grant: the subject token
// (Config.SubjectToken) for an access token whose audience and resource
// are the server's (RFC 8707), with the client's own credentials, through
// the SDK's oauthex.ExchangeToken. An authorization server that does not
// list the grant in its metadata is not asked. Without a subject token
// the principal needs a login: nothing is sent.
func (h *Handler) tokenExchange(ctx context.Context, cs []oauthex.Challenge) error {
	if h.cfg.SubjectToken == nil {
		return &LoginError{Server: h.server, Reason: "the token exchange grant has no source of the user's own token (conduit.Options.SubjectToken)"}
	}
	subject, err := h.cfg.SubjectToken(ctx)
	if err != nil || subject == "" {
		reason := "there is no token of the user's to exchange (the user has made no authenticated request, or their token expired)"
		if err != nil {
			reason = "the user's own token is unavailable: " + h.red.clean(err.Error())
		}
		h.noteSubject(subject)
		return &LoginError{Server: h.server, Reason: reason, Err: err}
	}
	h.red.add(subject)
	asm, prm, resource, err := h.discover(ctx, cs)
	if err != nil {
		return err
	}
	if g := asm.GrantTypesSupported; len(g) > 0 && !slices.Contains(g, oauthex.GrantTypeTokenExchange) {
		return &LoginError{Server: h.server, Reason: fmt.Sprintf("its authorization server %s does not offer token exchange (RFC 8693)", asm.Issuer)}
	}
	if err := CheckEndpoint("the token endpoint", asm.TokenEndpoint); err != nil {
		return err
	}
	id, secret, err := h.credentials()
	if err != nil {
		return err
	}
	creds := &oauthex.ClientCredentials{ClientID: id}
	if secret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
	}
	scopes := union(h.serverScopes(cs, prm), h.cfg.Scopes)
	tok, err := oauthex.ExchangeToken(ctx, asm.TokenEndpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: tokenTypeAccessToken,
		Audience:           resource,
		Resource:           resource,
		Scope:              scopes,
		SubjectToken:       subject,
		SubjectTokenType:   tokenTypeAccessToken,
	}, creds, h.hc)
	if err != nil {
		h.noteSubject(subject)
		return &LoginError{Server: h.server, Reason: "the authorization server refused to exchange the user's token: " + h.red.clean(err.Error()), Err: err}
	}
	if typ, _ := tok.Extra("issued_token_type").(string); typ != tokenTypeAccessToken && typ != tokenTypeJWT {
		return fmt.Errorf("oauth: the token exchange at %s issued a %q, not an access token", asm.TokenEndpoint, typ)
	}
	if err := h.usable(tok); err != nil {
		return err
	}
	// No refresh (RFC 8693 §2.2.1 advises against a refresh token here):
	// when the token expires, the next 401 exchanges the user's current
	// token again.
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	h.red.add(tok.AccessToken, tok.RefreshToken)
	h.ts = &tokenSource{h: h, base: oauth2.StaticTokenSource(tok), static: true,
		rec: Record{Resource: h.endpoint, Indicator: resource, Issuer: asm.Issuer, ClientID: id, Scopes: scopes, Token: tok}, saved: tok.AccessToken}
	h.dead = ""
	h.subjectFailed = ""
	h.loaded = true
	h.signalLocked()
	return nil
}

// noteSubject remembers the subject token that could not be exchanged:
// WaitLogin ends once the user has another.
func (h *Handler) noteSubject(subject string) {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	h.subjectFailed = subject
	if subject == "" {
		h.subjectFailed = noSubject
	}
}

// noSubject stands for "no token at all" in Handler.subjectFailed.
const noSubject = "\x00none"

// newSubject reports whether the token exchange grant has a subject token
// other than the one that failed.
func (h *Handler) newSubject(ctx context.Context) bool {
	if h.cfg.grant() != GrantTokenExchange || h.cfg.SubjectToken == nil {
		return false
	}
	h.tsMu.Lock()
	failed := h.subjectFailed
	h.tsMu.Unlock()
	if failed == "" {
		return false
	}
	s, err := h.cfg.SubjectToken(ctx)
	return err == nil && s != "" && s != failed && !strings.ContainsAny(s, " \t\r\n")
}
