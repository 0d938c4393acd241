// Package skills is the MCP skills extension (SEP-2640) on the client.
// It lists a server's skills and loads one, file by file, each checked
// against the listing's digest and size before it is used. It reaches
// servers only through the hub's governed hook ([conduit.Hub.Extension]).
// So the policy decides which principal sees and loads which skill, as
// server/skill:NAME. And a skill's digest is pinned as a tool is.
package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ExtensionName is the skills extension's name in a server's
// capabilities. Only a server that declares it is asked for skills.
const ExtensionName = "io.modelcontextprotocol/skills"

// MethodLoad is the method a policy condition sees when a skill is
// listed or loaded. The skill is governed as server/skill:NAME.
const MethodLoad = "skills/load"

// maxSkillPages bounds the pages of one skills/list.
const maxSkillPages = 100

// ErrVerification matches (errors.Is) a skill file that failed its
// check against the listing: digest, size or frontmatter. Its content
// is not returned.
var ErrVerification = errors.New("skills: skill file failed verification")

// ErrNotListed matches a read of a URI the skill's listing does not
// name. Nothing is sent to the server.
var ErrNotListed = errors.New("skills: URI is not a file of the skill")

// A Skill is one entry of a server's skills/list. It holds its SKILL.md's
// URI, the frontmatter the server says that file has, and its files.
// Nothing of the skill is read until it is loaded.
type Skill struct {
	Server      string         // the server's id
	Name        string         // the frontmatter's name, else the URI's last skill-path segment
	URI         string         // skill://.../SKILL.md
	Frontmatter map[string]any // as listed; SKILL.md's must match it
	// Files are the listed files, SKILL.md among them. A skill listed
	// with "dynamic" files has none, and cannot be loaded.
	Files []File
	// Dynamic reports that the server listed no manifest of files.
	Dynamic bool
	// Entry is the entry as the server listed it, unknown fields kept.
	// A gateway passes it on as it is.
	Entry json.RawMessage
}

// A File is one file of a skill's manifest.
type File struct {
	URI    string
	Digest string // "sha256:" and 64 lowercase hex digits
	Size   int64  // in bytes
}

// A Loaded skill is one whose SKILL.md was read and verified.
type Loaded struct {
	*Skill
	// Instructions is SKILL.md's text, frontmatter included.
	Instructions string
}

// A Source is what skills are read through: a *conduit.Hub or a
// *conduit.Client. Its Extension is the governed hook every request of
// this package goes through.
type Source interface {
	Extension(context.Context, *conduit.ExtensionRequest, *conduit.CallOptions) (json.RawMessage, error)
	Status() []conduit.ServerStatus
}

var (
	_ Source = (*conduit.Hub)(nil)
	_ Source = (*conduit.Client)(nil)
)

// List returns the skills of every server of src that is up and declares
// the skills extension. It leaves out those the policy denies outright
// for opts' principal and taint. No skill file is read. A server that
// fails is named in the error. The others' skills are returned. opts may
// be nil.
func List(ctx context.Context, src Source, opts *conduit.ListOptions) ([]*Skill, error) {
	servers := src.Status()
	lists := make([][]*Skill, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, st := range servers {
		wg.Go(func() {
			l, err := ListServer(ctx, src, st.ID, opts)
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
				return // the server has no skills
			}
			lists[i], errs[i] = l, err
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return slices.Concat(lists...), errors.Join(errs...)
}

// ListServer returns the skills of the one server with id server, as
// [List] lists them, every page. A server that does not declare the
// extension is a *jsonrpc.Error of code -32601.
func ListServer(ctx context.Context, src Source, server string, opts *conduit.ListOptions) ([]*Skill, error) {
	o := listOptions(opts)
	all, err := Listed(ctx, src, server, opts)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, sk := range all {
		if decide(ctx, src, sk, o) == nil {
			out = append(out, sk)
		}
	}
	return out, nil
}

// Listed returns every skill the server with id server lists, the policy
// not asked: what an operator reviews and pins (conduit pin). A client
// lists with [List], which leaves out what the policy denies. Loading a
// skill is decided either way.
func Listed(ctx context.Context, src Source, server string, opts *conduit.ListOptions) ([]*Skill, error) {
	o := listOptions(opts)
	var out []*Skill
	cursor := ""
	for range maxSkillPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := src.Extension(ctx, &conduit.ExtensionRequest{Server: server, Extension: ExtensionName, Method: "skills/list", Params: params}, o)
		if err != nil {
			return nil, fmt.Errorf("server %s: skills/list: %w", server, err)
		}
		var res struct {
			Skills     []json.RawMessage `json:"skills"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("server %s: skills/list: the result: %w", server, err)
		}
		for _, raw := range res.Skills {
			sk, err := parseSkill(server, raw)
			if err != nil {
				return nil, fmt.Errorf("server %s: skills/list: %w", server, err)
			}
			out = append(out, sk)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("server %s: skills/list: more than %d pages", server, maxSkillPages)
}

// listOptions is opts as the hook's CallOptions.
func listOptions(opts *conduit.ListOptions) *conduit.CallOptions {
	if opts == nil {
		return nil
	}
	return &conduit.CallOptions{Principal: opts.Principal, Taint: opts.Taint}
}

// decide is the policy's decision on sk, as server/skill:NAME. Nothing is
// sent. The pins are not checked: a listing shows what a pin refuses.
func decide(ctx context.Context, src Source, sk *Skill, o *conduit.CallOptions) error {
	_, err := src.Extension(ctx, &conduit.ExtensionRequest{Server: sk.Server, Extension: ExtensionName,
		Method: MethodLoad, DecideOnly: true, Governed: "skill:" + sk.Name}, o)
	return err
}

// Get asks the server with id server for the one skill at uri
// (skills/get). Nothing of it is read. A skill the policy denies is
// refused (errors.Is conduit.ErrDenied). An unknown uri is the server's
// error (-32602). On a Client, server may be "".
func Get(ctx context.Context, src Source, server, uri string, opts *conduit.ListOptions) (*Skill, error) {
	o := listOptions(opts)
	raw, err := src.Extension(ctx, &conduit.ExtensionRequest{Server: server, Extension: ExtensionName, Method: "skills/get", Params: map[string]any{"uri": uri}}, o)
	if err != nil {
		return nil, fmt.Errorf("server %s: skills/get %s: %w", server, uri, err)
	}
	var res struct {
		Skill json.RawMessage `json:"skill"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("server %s: skills/get %s: the result: %w", server, uri, err)
	}
	sk, err := parseSkill(server, res.Skill)
	if err == nil && sk.URI != uri {
		err = fmt.Errorf("the server answered with skill %s", sk.URI)
	}
	if err != nil {
		return nil, fmt.Errorf("server %s: skills/get %s: %w", server, uri, err)
	}
	if err := decide(ctx, src, sk, o); err != nil {
		return nil, err
	}
	return sk, nil
}

// Load reads sk's SKILL.md and verifies it:
//
//   - its size and digest against the listing
//   - its frontmatter, field by field, against the listing's
//   - its text, for hidden characters
//
// The policy decides on server/skill:NAME first, and with pins the
// skill's [Skill.Digest] must be the pinned one. The read is a governed
// resources/read of server/URI. A file that fails is an error matching
// [ErrVerification]. Its content is not returned. Nothing else of the
// skill is read; see [ReadFile].
func Load(ctx context.Context, src Source, sk *Skill, opts *conduit.CallOptions) (*Loaded, error) {
	body, err := ReadFile(ctx, src, sk, sk.URI, opts)
	if err != nil {
		return nil, err
	}
	fm, err := parseFrontmatter(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrVerification, sk.URI, err)
	}
	if err := sameFrontmatter(fm, sk.Frontmatter); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrVerification, sk.URI, err)
	}
	return &Loaded{Skill: sk, Instructions: string(body)}, nil
}

// ReadFile reads one file of sk's manifest, when it is needed. The policy
// decides on the skill and the pins are checked first, as [Load] does. The
// file is verified against its size and digest, and for hidden characters.
// A URI the manifest does not list is refused ([ErrNotListed]). The server
// is not asked.
func ReadFile(ctx context.Context, src Source, sk *Skill, uri string, opts *conduit.CallOptions) ([]byte, error) {
	_, data, err := read(ctx, src, sk, uri, opts)
	return data, err
}

// ReadResult is [ReadFile] that returns the read's result as the server
// sent it (its MIME type kept), once its one content is verified. A
// gateway answers its clients' reads of skill files with it.
func ReadResult(ctx context.Context, src Source, sk *Skill, uri string, opts *conduit.CallOptions) (*mcp.ReadResourceResult, error) {
	res, _, err := read(ctx, src, sk, uri, opts)
	return res, err
}

func read(ctx context.Context, src Source, sk *Skill, uri string, opts *conduit.CallOptions) (*mcp.ReadResourceResult, []byte, error) {
	file := sk.file(uri)
	if file == nil {
		return nil, nil, fmt.Errorf("%w: %s is not in the manifest of skill %s", ErrNotListed, uri, sk.URI)
	}
	if err := allowLoad(ctx, src, sk, opts); err != nil {
		return nil, nil, err
	}
	raw, err := src.Extension(ctx, &conduit.ExtensionRequest{Server: sk.Server, Extension: ExtensionName,
		Method: "resources/read", Params: map[string]any{"uri": uri}}, opts)
	if err != nil {
		return nil, nil, err
	}
	var res mcp.ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrVerification, uri, err)
	}
	data, err := skillContent(&res, uri)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrVerification, uri, err)
	}
	if err := verifySkillFile(data, *file); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrVerification, uri, err)
	}
	return &res, data, nil
}

// file is the manifest's entry of uri, or nil.
func (sk *Skill) file(uri string) *File {
	for i := range sk.Files {
		if sk.Files[i].URI == uri {
			return &sk.Files[i]
		}
	}
	return nil
}

// allowLoad is the policy's decision on loading sk, and the pins' check.
func allowLoad(ctx context.Context, src Source, sk *Skill, opts *conduit.CallOptions) error {
	_, err := src.Extension(ctx, &conduit.ExtensionRequest{Server: sk.Server, Extension: ExtensionName,
		Method: MethodLoad, DecideOnly: true, Governed: "skill:" + sk.Name, Pin: true, Digest: sk.Digest()}, opts)
	return err
}

// Dir is the URI of sk's directory: its SKILL.md's, less "/SKILL.md".
func (sk *Skill) Dir() string { return strings.TrimSuffix(sk.URI, "/SKILL.md") }

// Under reports whether uri is sk's directory, or a file or directory of
// its manifest: what a client of sk may read or list.
func (sk *Skill) Under(uri string) bool {
	if uri == sk.Dir() || sk.file(uri) != nil {
		return true
	}
	prefix := strings.TrimSuffix(uri, "/") + "/"
	if !strings.HasPrefix(prefix, sk.Dir()+"/") {
		return false
	}
	for _, f := range sk.Files {
		if strings.HasPrefix(f.URI, prefix) {
			return true
		}
	}
	return false
}

// DirectoryRead is the skills extension's setting that says a server
// answers resources/directory/read.
const DirectoryRead = "directoryRead"

// ReadDirectory lists the children of the directory uri of sk
// (resources/directory/read, every page). Only a server whose extension
// settings say directoryRead: true is asked; another is a *jsonrpc.Error
// of code -32601. The policy decides on the skill and the pins are
// checked first, as [Load] does. A uri that is not sk's directory or one
// under it is refused ([ErrNotListed]), the server not asked. A child
// the manifest does not account for is left out.
func ReadDirectory(ctx context.Context, src Source, sk *Skill, uri string, opts *conduit.CallOptions) ([]*mcp.Resource, error) {
	if !sk.Under(uri) {
		return nil, fmt.Errorf("%w: %s is not under skill %s", ErrNotListed, uri, sk.URI)
	}
	if err := allowLoad(ctx, src, sk, opts); err != nil {
		return nil, err
	}
	var out []*mcp.Resource
	cursor := ""
	for range maxSkillPages {
		params := map[string]any{"uri": uri}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := src.Extension(ctx, &conduit.ExtensionRequest{Server: sk.Server, Extension: ExtensionName, Setting: DirectoryRead,
			Method: "resources/directory/read", Params: params}, opts)
		if err != nil {
			return nil, fmt.Errorf("server %s: resources/directory/read %s: %w", sk.Server, uri, err)
		}
		var res struct {
			Resources  []*mcp.Resource `json:"resources"`
			NextCursor string          `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("server %s: resources/directory/read %s: the result: %w", sk.Server, uri, err)
		}
		for _, r := range res.Resources {
			if r != nil && sk.Under(r.URI) {
				out = append(out, r)
			}
		}
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("server %s: resources/directory/read %s: more than %d pages", sk.Server, uri, maxSkillPages)
}

// Servers returns the ids of src's servers that are up and declare the
// skills extension, for opts' principal. With setting, only those whose
// extension settings have it true (as [DirectoryRead]).
func Servers(ctx context.Context, src Source, setting string, opts *conduit.ListOptions) []string {
	var out []string
	for _, st := range src.Status() {
		req := &conduit.ExtensionRequest{Server: st.ID, Extension: ExtensionName, Setting: setting, Method: MethodLoad, DecideOnly: true}
		if _, err := src.Extension(ctx, req, listOptions(opts)); err == nil {
			out = append(out, st.ID)
		}
	}
	return out
}

// parseSkill reads one skill entry, refusing one it cannot verify later.
func parseSkill(server string, raw json.RawMessage) (*Skill, error) {
	var e struct {
		URI         string          `json:"uri"`
		Frontmatter map[string]any  `json:"frontmatter"`
		Resources   json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("a skill entry: %w", err)
	}
	path, ok := strings.CutPrefix(e.URI, "skill://")
	if !ok || !strings.HasSuffix(path, "/SKILL.md") {
		return nil, fmt.Errorf("skill URI %q is not skill://PATH/SKILL.md", e.URI)
	}
	if e.Frontmatter == nil {
		return nil, fmt.Errorf("skill %s has no frontmatter object", e.URI)
	}
	segs := strings.Split(strings.TrimSuffix(path, "/SKILL.md"), "/")
	sk := &Skill{Server: server, URI: e.URI, Frontmatter: e.Frontmatter, Name: segs[len(segs)-1], Entry: slices.Clone(raw)}
	if n, ok := e.Frontmatter["name"].(string); ok && n != "" {
		sk.Name = n
	}
	if string(e.Resources) == `"dynamic"` {
		sk.Dynamic = true
		return sk, nil
	}
	var files []struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   *int64 `json:"size"`
	}
	if err := json.Unmarshal(e.Resources, &files); err != nil {
		return nil, fmt.Errorf("skill %s: resources: %w", e.URI, err)
	}
	for _, f := range files {
		if err := digest.Check(f.Digest); err != nil {
			return nil, fmt.Errorf("skill %s: file %s: %w", e.URI, f.URI, err)
		}
		if f.Size == nil || *f.Size < 0 {
			return nil, fmt.Errorf("skill %s: file %s has no size", e.URI, f.URI)
		}
		sk.Files = append(sk.Files, File{URI: f.URI, Digest: f.Digest, Size: *f.Size})
	}
	return sk, nil
}

// skillContent is the one content of a read, as bytes.
func skillContent(res *mcp.ReadResourceResult, uri string) ([]byte, error) {
	if len(res.Contents) != 1 || res.Contents[0] == nil {
		return nil, fmt.Errorf("the read has %d contents, not one", len(res.Contents))
	}
	rc := res.Contents[0]
	if rc.URI != "" && rc.URI != uri {
		return nil, fmt.Errorf("the read is of %q", rc.URI)
	}
	if rc.Blob != nil {
		return rc.Blob, nil
	}
	return []byte(rc.Text), nil
}

// verifySkillFile checks data against its manifest entry. It checks the
// size first, then the digest, then hidden characters in a text file.
func verifySkillFile(data []byte, f File) error {
	if int64(len(data)) != f.Size {
		return fmt.Errorf("%d bytes, the listing says %d", len(data), f.Size)
	}
	if got := digest.Of(data); got != f.Digest {
		return fmt.Errorf("digest %s, the listing says %s", got, f.Digest)
	}
	for _, r := range string(data) {
		if textsafe.Hidden(r) {
			return fmt.Errorf("hidden character %s", textsafe.Escape(string(r)))
		}
	}
	return nil
}

// parseFrontmatter reads SKILL.md's leading "---" block: flat
// "key: value" lines of YAML scalars. Anything richer is refused, since
// it could not be compared with certainty.
func parseFrontmatter(text string) (map[string]any, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil, errors.New("SKILL.md does not begin with a --- frontmatter block")
	}
	block, _, ok := strings.Cut(rest, "\n---")
	if !ok {
		return nil, errors.New("SKILL.md's frontmatter block is not closed")
	}
	fm := map[string]any{}
	for n, line := range strings.Split(block, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' || line[0] == '-' {
			return nil, fmt.Errorf("frontmatter line %d: nested YAML is not supported", n+1)
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("frontmatter line %d is not key: value", n+1)
		}
		k = strings.TrimSpace(k)
		if _, dup := fm[k]; dup {
			return nil, fmt.Errorf("frontmatter key %q twice", k)
		}
		val, err := yamlScalar(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("frontmatter %s: %v", k, err)
		}
		fm[k] = val
	}
	return fm, nil
}

// yamlScalar reads a plain or quoted YAML scalar as a string. A plain one
// that would be a block, flow or other YAML structure is refused.
func yamlScalar(v string) (string, error) {
	if v == "" {
		return "", errors.New("an empty or nested value is not supported")
	}
	switch v[0] {
	case '"':
		s, err := strconv.Unquote(v)
		if err != nil {
			return "", fmt.Errorf("bad double-quoted string %s", v)
		}
		return s, nil
	case '\'':
		if len(v) < 2 || v[len(v)-1] != '\'' {
			return "", fmt.Errorf("bad single-quoted string %s", v)
		}
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'"), nil
	case '|', '>', '[', '{', '&', '*', '!', '%', '@', '`':
		return "", fmt.Errorf("YAML %q values are not supported", v[0])
	}
	if strings.Contains(v, " #") {
		v = strings.TrimSpace(v[:strings.Index(v, " #")])
	}
	return v, nil
}

// sameFrontmatter compares the file's frontmatter with the listing's,
// field by field. A field in one and not the other is a discrepancy. So
// is a field with another value.
func sameFrontmatter(file, listed map[string]any) error {
	var diffs []string
	for k, v := range file {
		lv, ok := listed[k]
		if !ok {
			diffs = append(diffs, k+": not in the listing")
			continue
		}
		if !reflect.DeepEqual(v, lv) {
			diffs = append(diffs, fmt.Sprintf("%s: the file says %q, the listing %v", k, textsafe.EscapeLine(fmt.Sprint(v)), textsafe.EscapeLine(fmt.Sprint(lv))))
		}
	}
	for k := range listed {
		if _, ok := file[k]; !ok {
			diffs = append(diffs, k+": not in the file")
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("frontmatter differs from the listing: %s", strings.Join(diffs, "; "))
	}
	return nil
}
