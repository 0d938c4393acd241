// Command captools recaptures the real tool lists in testdata/servers: it
// installs each published MCP server of the table below from the npm
// registry at its pinned version into a scratch directory outside the
// repository, starts it over stdio with dummy credentials where it insists
// on some, lists its tools (every page) and writes what the server sent to
// testdata/servers/ID.json, then index.json with the package, version and
// date of each capture. Nothing is called but tools/list. The one edit made
// to what a server sent: its working directory, where a description names
// it, reads /home/user/project. Run it from the
// bench module's root:
//
//	go run ./cmd/captools -scratch /tmp/mcpcap            # every server
//	go run ./cmd/captools -scratch /tmp/mcpcap -only notion,sentry
//
// Servers not on npm are not captured here; testdata/servers/README.md says
// where those lists come from.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is one published server to capture.
type server struct {
	ID      string   // the server id in the corpus
	Package string   // the npm package
	Version string   // pinned
	Bin     string   // the package's executable; empty: the package's only one
	Args    []string // arguments, with dummy credentials where required
	Env     []string // KEY=value, dummy credentials where required
}

// workDir stands for the server's working directory in the captures.
const workDir = "/home/user/project"

// dummy is the placeholder credential: no server is ever called with it,
// only started and asked for its tool list.
const dummy = "captools-dummy-credential"

var servers = []server{
	{ID: "github", Package: "@modelcontextprotocol/server-github", Version: "2025.4.8", Env: []string{"GITHUB_PERSONAL_ACCESS_TOKEN=" + dummy}},
	{ID: "gitlab", Package: "@zereight/mcp-gitlab", Version: "2.1.64", Bin: "mcp-gitlab", Env: []string{"GITLAB_PERSONAL_ACCESS_TOKEN=" + dummy, "GITLAB_API_URL=https://gitlab.invalid/api/v4"}},
	{ID: "playwright", Package: "@playwright/mcp", Version: "0.0.86"},
	{ID: "chrome_devtools", Package: "chrome-devtools-mcp", Version: "1.11.0", Bin: "chrome-devtools-mcp"},
	{ID: "notion", Package: "@notionhq/notion-mcp-server", Version: "2.5.2", Env: []string{"NOTION_TOKEN=" + dummy}},
	// Every feature but docs, whose search_docs tool fetches the content
	// API's GraphQL schema to list itself.
	{ID: "supabase", Package: "@supabase/mcp-server-supabase", Version: "0.13.0", Args: []string{"--access-token", dummy, "--features", "account,database,debugging,development,functions,branching,storage"}},
	{ID: "kubernetes", Package: "mcp-server-kubernetes", Version: "4.1.7"},
	{ID: "sentry", Package: "@sentry/mcp-server", Version: "0.39.0", Args: []string{"--access-token", dummy}},
	{ID: "memory", Package: "@modelcontextprotocol/server-memory", Version: "2026.8.31"},
	{ID: "sequential_thinking", Package: "@modelcontextprotocol/server-sequential-thinking", Version: "2026.8.31"},
	{ID: "filesystem", Package: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Args: []string{"/tmp"}},
	{ID: "everything", Package: "@modelcontextprotocol/server-everything", Version: "2026.8.31"},
	{ID: "slack", Package: "@modelcontextprotocol/server-slack", Version: "2025.4.25", Env: []string{"SLACK_BOT_TOKEN=xoxb-" + dummy, "SLACK_TEAM_ID=T00000000"}},
	{ID: "mongodb", Package: "mongodb-mcp-server", Version: "3.0.4"},
	{ID: "context7", Package: "@upstash/context7-mcp", Version: "4.1.1"},
	{ID: "tavily", Package: "tavily-mcp", Version: "0.2.22", Env: []string{"TAVILY_API_KEY=" + dummy}},
	{ID: "firecrawl", Package: "firecrawl-mcp", Version: "3.26.0", Env: []string{"FIRECRAWL_API_KEY=fc-" + dummy}},
	{ID: "circleci", Package: "@circleci/mcp-server-circleci", Version: "0.20.0", Env: []string{"CIRCLECI_TOKEN=" + dummy}},
	{ID: "brave_search", Package: "@brave/brave-search-mcp-server", Version: "2.1.4", Env: []string{"BRAVE_API_KEY=" + dummy}},
	{ID: "exa", Package: "exa-mcp-server", Version: "3.4.1", Env: []string{"EXA_API_KEY=" + dummy}},
	{ID: "datadog", Package: "@winor30/mcp-server-datadog", Version: "1.8.0", Env: []string{"DATADOG_API_KEY=" + dummy, "DATADOG_APP_KEY=" + dummy}},
	{ID: "figma", Package: "figma-developer-mcp", Version: "0.13.2", Args: []string{"--stdio", "--figma-api-key=" + dummy}},
	{ID: "launchdarkly", Package: "@launchdarkly/mcp-server", Version: "0.6.2", Args: []string{"start", "--api-key", dummy}},
	{ID: "shortcut", Package: "@shortcut/mcp", Version: "0.25.0", Env: []string{"SHORTCUT_API_TOKEN=" + dummy}},
	{ID: "mapbox", Package: "@mapbox/mcp-server", Version: "0.14.0", Env: []string{"MAPBOX_ACCESS_TOKEN=pk." + dummy}},
	{ID: "monday", Package: "@mondaydotcomorg/monday-api-mcp", Version: "3.3.0", Args: []string{"-t", dummy}},
	{ID: "hubspot", Package: "@hubspot/mcp-server", Version: "0.4.0", Env: []string{"PRIVATE_APP_ACCESS_TOKEN=" + dummy}},
	{ID: "jira", Package: "@aashari/mcp-server-atlassian-jira", Version: "3.3.0", Env: []string{"ATLASSIAN_SITE_NAME=example", "ATLASSIAN_USER_EMAIL=dummy@example.com", "ATLASSIAN_API_TOKEN=" + dummy}},
	{ID: "chart", Package: "@antv/mcp-server-chart", Version: "0.9.10"},
	{ID: "desktop_commander", Package: "@wonderwhy-er/desktop-commander", Version: "0.2.52", Bin: "desktop-commander"},
	{ID: "perplexity", Package: "@perplexity-ai/mcp-server", Version: "1.2.1", Env: []string{"PERPLEXITY_API_KEY=" + dummy}},
	{ID: "google_maps", Package: "@modelcontextprotocol/server-google-maps", Version: "0.6.2", Env: []string{"GOOGLE_MAPS_API_KEY=" + dummy}},
	{ID: "puppeteer", Package: "@modelcontextprotocol/server-puppeteer", Version: "2025.5.12"},
	{ID: "postgres", Package: "@modelcontextprotocol/server-postgres", Version: "0.6.2", Args: []string{"postgresql://dummy@127.0.0.1:1/dummy"}},
}

// Capture is one file of testdata/servers: the server's tools as tools/list
// returned them.
type Capture struct {
	Tools []*mcp.Tool `json:"tools"`
}

// Entry is one line of index.json.
type Entry struct {
	ID       string `json:"id"`
	Package  string `json:"package"`
	Version  string `json:"version"`
	Captured string `json:"captured"` // the date, UTC
	Tools    int    `json:"tools"`
	// Server is the name and version the server reported at initialize.
	Server string `json:"server,omitempty"`
}

func main() {
	scratch := flag.String("scratch", "", "scratch `DIR` outside the repository to install the servers into (required)")
	out := flag.String("out", "testdata/servers", "`DIR` to write the captures and index.json into")
	only := flag.String("only", "", "comma-separated server `IDS` to capture (default all)")
	timeout := flag.Duration("timeout", 90*time.Second, "per server: installing, starting and listing")
	flag.Parse()
	if *scratch == "" {
		log.Fatal("captools: -scratch DIR is required (a directory outside the repository)")
	}
	abs, err := filepath.Abs(*scratch)
	if err != nil {
		log.Fatal(err)
	}
	index, err := readIndex(*out)
	if err != nil {
		log.Fatal(err)
	}
	want := map[string]bool{}
	for _, id := range strings.Split(*only, ",") {
		if id != "" {
			want[id] = true
		}
	}
	failed := 0
	for _, s := range servers {
		if len(want) > 0 && !want[s.ID] {
			continue
		}
		e, err := capture(abs, *out, s, *timeout)
		if err != nil {
			log.Printf("%s (%s@%s): %v", s.ID, s.Package, s.Version, err)
			failed++
			continue
		}
		log.Printf("%s: %d tools (%s)", s.ID, e.Tools, e.Server)
		index[s.ID] = e
	}
	if err := writeIndex(*out, index); err != nil {
		log.Fatal(err)
	}
	if failed > 0 {
		os.Exit(1)
	}
}

func capture(scratch, out string, s server, timeout time.Duration) (Entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dir := filepath.Join(scratch, s.ID)
	bin, err := install(ctx, dir, s)
	if err != nil {
		return Entry{}, err
	}
	cmd := exec.Command(bin, s.Args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "NO_COLOR=1")
	cmd.Env = append(cmd.Env, s.Env...)
	cmd.Stderr = nil // servers log to stderr; what they say is not the capture
	client := mcp.NewClient(&mcp.Implementation{Name: "conduit-captools", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		return Entry{}, fmt.Errorf("starting: %w", err)
	}
	defer cs.Close()
	var c Capture
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return Entry{}, fmt.Errorf("tools/list: %w", err)
		}
		c.Tools = append(c.Tools, t)
	}
	if len(c.Tools) == 0 {
		return Entry{}, errors.New("the server lists no tools")
	}
	data, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return Entry{}, err
	}
	// A server that names its working directory in a description (figma's
	// image directory) names the scratch directory: say a neutral one, so
	// the capture does not depend on where it was made.
	data = bytes.ReplaceAll(data, []byte(dir), []byte(workDir))
	if err := os.WriteFile(filepath.Join(out, s.ID+".json"), append(data, '\n'), 0o644); err != nil {
		return Entry{}, err
	}
	e := Entry{ID: s.ID, Package: s.Package, Version: s.Version, Captured: time.Now().UTC().Format("2006-01-02"), Tools: len(c.Tools)}
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		e.Server = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	return e, nil
}

// install puts s's package into dir (once per version) and returns the
// path of its executable.
func install(ctx context.Context, dir string, s server) (string, error) {
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(s.Package))
	if v, _ := packageVersion(pkgDir); v != s.Version {
		if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
			return "", err
		}
		npm := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--save-exact", s.Package+"@"+s.Version)
		npm.Dir = dir
		// Listing tools needs no browser: skip the browser downloads.
		npm.Env = append(os.Environ(), "PUPPETEER_SKIP_DOWNLOAD=1", "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
		if outb, err := npm.CombinedOutput(); err != nil {
			return "", fmt.Errorf("npm install: %w\n%s", err, outb)
		}
	}
	var pkg struct {
		Bin any `json:"bin"`
	}
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return "", err
	}
	var rel string
	switch b := pkg.Bin.(type) {
	case string:
		rel = b
	case map[string]any:
		if s.Bin != "" {
			rel, _ = b[s.Bin].(string)
		} else if len(b) == 1 {
			for _, v := range b {
				rel, _ = v.(string)
			}
		} else {
			names := make([]string, 0, len(b))
			for k := range b {
				names = append(names, k)
			}
			slices.Sort(names)
			return "", fmt.Errorf("the package has several executables %v: set Bin", names)
		}
	}
	if rel == "" {
		return "", errors.New("the package names no executable")
	}
	return filepath.Join(pkgDir, rel), nil
}

func packageVersion(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct {
		Version string `json:"version"`
	}
	err = json.Unmarshal(data, &pkg)
	return pkg.Version, err
}

func readIndex(dir string) (map[string]Entry, error) {
	index := map[string]Entry{}
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if errors.Is(err, os.ErrNotExist) {
		return index, os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return nil, err
	}
	var list []Entry
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	for _, e := range list {
		index[e.ID] = e
	}
	return index, nil
}

// writeIndex writes the entries in the table's order, then any others by id.
func writeIndex(dir string, index map[string]Entry) error {
	order := map[string]int{}
	for i, s := range servers {
		order[s.ID] = i
	}
	list := make([]Entry, 0, len(index))
	for _, e := range index {
		list = append(list, e)
	}
	slices.SortFunc(list, func(a, b Entry) int {
		ia, oka := order[a.ID]
		ib, okb := order[b.ID]
		switch {
		case oka && okb:
			return cmp.Compare(ia, ib)
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	data, err := json.MarshalIndent(list, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.json"), append(data, '\n'), 0o644)
}
