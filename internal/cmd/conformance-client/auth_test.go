package main

import (
	"reflect"
	"testing"
)

// TestCrossAppAccessNames: the cross-app access scenario is configured
// the same under its name in suite 0.1.16 and its newer one, and the
// setting is one conduit's loader takes.
func TestCrossAppAccessNames(t *testing.T) {
	sc := &scenarioContext{ClientID: "c", ClientSecret: "s", IdPIssuer: "https://idp.example", IdPTokenEndpoint: "https://idp.example/token",
		IdPClientID: "idp-c", IdPIDToken: "tok"}
	older := oauthSetting("auth/cross-app-access-complete-flow", sc)
	newer := oauthSetting("auth/enterprise-managed-authorization", sc)
	if older["grant"] != "cross_app_access" || !reflect.DeepEqual(older, newer) {
		t.Fatalf("0.1.16's name: %v\nthe newer: %v", older, newer)
	}
	t.Setenv(envSecret, "s")
	t.Setenv(envIdPToken, "tok")
	srv, err := authServer("auth/cross-app-access-complete-flow", "https://mcp.example/mcp", sc)
	if err != nil || srv.OAuth == nil {
		t.Fatalf("%+v %v", srv, err)
	}
}
