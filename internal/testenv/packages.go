package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TypeScriptSDKPkg is the npm package of the official TypeScript MCP SDK,
// whose client the gateway's tests put in front of conduit serve.
const TypeScriptSDKPkg = "@modelcontextprotocol/sdk"

// Package returns the directory of the npm package pkg in the repository's
// node_modules, for a script that imports it. It skips or fails t, see the
// package doc, when node is missing, the package is not installed, or the
// installed version is not the one package-lock.json pins.
func Package(t testing.TB, pkg string) string {
	t.Helper()
	Node(t)
	root := RepoRoot()
	dir := filepath.Join(root, "node_modules", filepath.FromSlash(pkg))
	var manifest struct {
		Version string `json:"version"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(data, &manifest)
	}
	switch want := lockedVersion(root, pkg); {
	case err != nil:
		unavailable(t, "%s is not installed in %s", pkg, filepath.Join(root, "node_modules"))
	case want == "" || want != manifest.Version:
		unavailable(t, "%s", fmt.Sprintf("node_modules has %s@%s but package-lock.json pins %q", pkg, manifest.Version, want))
	}
	return dir
}
