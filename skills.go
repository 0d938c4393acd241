// Skills (the MCP skills extension, SEP-2640) on the client. It lists a
// server's skills, and loads one file by file. Each file is checked
// against the listing's digest and size before it is used.
package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SkillsExtension is the skills extension's name in a server's
// capabilities. Only a server that declares it is asked for skills.
const SkillsExtension = "io.modelcontextprotocol/skills"

// methodLoadSkill is the method a policy condition sees when a skill is
// loaded. The skill is governed as server/skill:NAME.
const methodLoadSkill = "skills/load"

// maxSkillPages bounds the pages of one skills/list.
const maxSkillPages = 100

// ErrSkillVerification matches (errors.Is) a skill file that failed its
// check against the listing: digest, size or frontmatter. Its content
// is not returned.
var ErrSkillVerification = errors.New("conduit: skill file failed verification")

// ErrSkillNotListed matches a read of a URI the skill's listing does not
// name. Nothing is sent to the server.
var ErrSkillNotListed = errors.New("conduit: URI is not a file of the skill")

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
	Files []SkillFile
	// Dynamic reports that the server listed no manifest of files.
	Dynamic bool
}

// A SkillFile is one file of a skill's manifest.
type SkillFile struct {
	URI    string
	Digest string // "sha256:" and 64 lowercase hex digits
	Size   int64  // in bytes
}

// A LoadedSkill is a skill whose SKILL.md was read and verified.
type LoadedSkill struct {
	*Skill
	// Instructions is SKILL.md's text, frontmatter included.
	Instructions string
}

// ListSkills returns the skills of every server that is up and declares
// the skills extension. It leaves out those the policy denies outright. A
// skill is governed as server/skill:NAME. No skill file is read. A server
// that fails is named in the error. The others' skills are returned.
func (h *Hub) ListSkills(ctx context.Context, opts *ListOptions) ([]*Skill, error) {
	return h.c.listSkills(ctx, opts)
}

// ListSkills returns the server's skills, as [Hub.ListSkills] does.
func (cl *Client) ListSkills(ctx context.Context, opts *ListOptions) ([]*Skill, error) {
	return cl.c.listSkills(ctx, opts)
}

// GetSkill asks the server with id server for the one skill at uri
// (skills/get), as ListSkills lists it. Nothing of it is read. A skill the
// policy denies is refused. An unknown uri is the server's error
// (-32602).
func (h *Hub) GetSkill(ctx context.Context, server, uri string, opts *ListOptions) (*Skill, error) {
	return h.c.getSkill(ctx, server, uri, opts)
}

// GetSkill asks the server for one skill, as [Hub.GetSkill] does.
func (cl *Client) GetSkill(ctx context.Context, uri string, opts *ListOptions) (*Skill, error) {
	return cl.c.getSkill(ctx, cl.c.slots[0].srv.ID, uri, opts)
}

// LoadSkill reads sk's SKILL.md and verifies it:
//
//   - its size and digest against the listing
//   - its frontmatter, field by field, against the listing's
//   - its text, for hidden characters
//
// The policy decides on server/skill:NAME first. The read is a governed
// resources/read of server/URI. A file that fails is an error matching
// [ErrSkillVerification]. Its content is not returned. Nothing else of
// the skill is read; see [Hub.ReadSkillFile].
func (h *Hub) LoadSkill(ctx context.Context, sk *Skill, opts *CallOptions) (*LoadedSkill, error) {
	return h.c.loadSkill(ctx, sk, opts)
}

// LoadSkill loads a skill, as [Hub.LoadSkill] does.
func (cl *Client) LoadSkill(ctx context.Context, sk *Skill, opts *CallOptions) (*LoadedSkill, error) {
	return cl.c.loadSkill(ctx, sk, opts)
}

// ReadSkillFile reads one file of sk's manifest, when it is needed. It is
// verified against its size and digest, as LoadSkill's SKILL.md is. A URI
// the manifest does not list is refused ([ErrSkillNotListed]). The server
// is not asked.
func (h *Hub) ReadSkillFile(ctx context.Context, sk *Skill, uri string, opts *CallOptions) ([]byte, error) {
	return h.c.readSkillFile(ctx, sk, uri, opts)
}

// ReadSkillFile reads a skill's file, as [Hub.ReadSkillFile] does.
func (cl *Client) ReadSkillFile(ctx context.Context, sk *Skill, uri string, opts *CallOptions) ([]byte, error) {
	return cl.c.readSkillFile(ctx, sk, uri, opts)
}

// skillCall is the governed call of loading sk.
func skillCall(sk *Skill, principal string, taint []string) *Call {
	return &Call{Method: methodLoadSkill, Server: sk.Server, Tool: "skill:" + sk.Name, Exposed: "skill:" + sk.Name, Principal: principal, Taint: taint}
}

func (c *core) listSkills(ctx context.Context, opts *ListOptions) ([]*Skill, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	lists := make([][]*Skill, len(c.slots))
	errs := make([]error, len(c.slots))
	err := c.eachServer(ctx, o.Principal, func(ctx context.Context, i int, id string, cn *conn, err error) {
		if err == nil {
			lists[i], err = cn.listSkills(ctx)
		}
		if err != nil {
			errs[i] = fmt.Errorf("server %s: skills/list: %w", id, err)
		}
	})
	if err != nil {
		return nil, err
	}
	var out []*Skill
	for _, l := range lists {
		for _, sk := range l {
			if !c.policyDenies(skillCall(sk, o.Principal, o.Taint)) {
				out = append(out, sk)
			}
		}
	}
	return out, errors.Join(errs...)
}

func (c *core) getSkill(ctx context.Context, server, uri string, opts *ListOptions) (*Skill, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	var sk *Skill
	found := false
	var gerr error
	err := c.eachServer(ctx, o.Principal, func(ctx context.Context, i int, id string, cn *conn, err error) {
		if id != server {
			return
		}
		found = true
		if err != nil {
			gerr = err
			return
		}
		sess, err := cn.current()
		if err != nil {
			gerr = err
			return
		}
		if _, ok := capabilities(sess).Extensions[SkillsExtension]; !ok {
			gerr = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the server does not declare " + SkillsExtension}
			return
		}
		var res struct {
			Skill json.RawMessage `json:"skill"`
		}
		if gerr = cn.extCall(ctx, sess, "skills/get", map[string]any{"uri": uri}, &res); gerr != nil {
			return
		}
		if sk, gerr = parseSkill(id, res.Skill); gerr == nil && sk.URI != uri {
			gerr = fmt.Errorf("the server answered with skill %s", sk.URI)
		}
	})
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, fmt.Errorf("conduit: no server %q", server)
	case gerr != nil:
		return nil, fmt.Errorf("server %s: skills/get %s: %w", server, uri, gerr)
	}
	if denied, why := c.policyDenial(skillCall(sk, o.Principal, o.Taint)); denied {
		return nil, &Error{Kind: ErrDenied, Server: sk.Server, Tool: "skill:" + sk.Name, Message: "Skill " + sk.Name + " was " + why + "."}
	}
	return sk, nil
}

// listSkills asks cn's server for its skills, every page.
func (cn *conn) listSkills(ctx context.Context) ([]*Skill, error) {
	sess, err := cn.current()
	if err != nil {
		return nil, err
	}
	if _, ok := capabilities(sess).Extensions[SkillsExtension]; !ok {
		return nil, nil
	}
	var out []*Skill
	cursor := ""
	for range maxSkillPages {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			Skills     []json.RawMessage `json:"skills"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := cn.extCall(ctx, sess, "skills/list", params, &res); err != nil {
			return nil, err
		}
		for _, raw := range res.Skills {
			sk, err := parseSkill(cn.srv.ID, raw)
			if err != nil {
				return nil, err
			}
			out = append(out, sk)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("more than %d pages", maxSkillPages)
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
	sk := &Skill{Server: server, URI: e.URI, Frontmatter: e.Frontmatter, Name: segs[len(segs)-1]}
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
		sk.Files = append(sk.Files, SkillFile{URI: f.URI, Digest: f.Digest, Size: *f.Size})
	}
	return sk, nil
}

func (c *core) loadSkill(ctx context.Context, sk *Skill, opts *CallOptions) (*LoadedSkill, error) {
	o := callOptions(opts)
	if denied, why := c.policyDenial(skillCall(sk, o.Principal, o.Taint)); denied {
		return nil, &Error{Kind: ErrDenied, Server: sk.Server, Tool: "skill:" + sk.Name, Message: "Loading skill " + sk.Name + " was " + why + "."}
	}
	if err := c.checkSkillPin(sk); err != nil {
		return nil, err
	}
	body, err := c.readSkillFile(ctx, sk, sk.URI, opts)
	if err != nil {
		return nil, err
	}
	fm, err := parseFrontmatter(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSkillVerification, sk.URI, err)
	}
	if err := sameFrontmatter(fm, sk.Frontmatter); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSkillVerification, sk.URI, err)
	}
	return &LoadedSkill{Skill: sk, Instructions: string(body)}, nil
}

func (c *core) readSkillFile(ctx context.Context, sk *Skill, uri string, opts *CallOptions) ([]byte, error) {
	var file *SkillFile
	for i := range sk.Files {
		if sk.Files[i].URI == uri {
			file = &sk.Files[i]
		}
	}
	if file == nil {
		return nil, fmt.Errorf("%w: %s is not in the manifest of skill %s", ErrSkillNotListed, uri, sk.URI)
	}
	if err := c.checkSkillPin(sk); err != nil {
		return nil, err
	}
	o := callOptions(opts)
	r := newRequest(methodReadResource, o, methodReadResource, uri)
	r.call.Tool = uri
	r.resolve = func(context.Context) error {
		r.call.Server = sk.Server
		return nil
	}
	var res *mcp.ReadResourceResult
	r.do = func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error {
		got, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{Meta: meta, URI: uri})
		if err == nil && got == nil {
			err = errors.New("the server sent an empty result")
		}
		res = got
		return err
	}
	if _, err := c.run(ctx, r); err != nil {
		return nil, err
	}
	data, err := skillContent(res, uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSkillVerification, uri, err)
	}
	if err := verifySkillFile(data, *file); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSkillVerification, uri, err)
	}
	return data, nil
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
func verifySkillFile(data []byte, f SkillFile) error {
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
