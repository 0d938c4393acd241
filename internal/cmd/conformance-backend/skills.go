package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The skills the skills scenarios (SEP-2640) read: each file a resource,
// listed with its digest and size by skills/list and skills/get, and
// each directory read by resources/directory/read. The SDK has no
// skills methods, so they are the SDK's custom methods.

// skillsExtension is the skills extension's name in the capabilities.
const skillsExtension = "io.modelcontextprotocol/skills"

// skillFile is one file of a skill.
type skillFile struct {
	uri, text string
}

// backendSkill is one skill: its name and description (SKILL.md's
// frontmatter) and its files, SKILL.md first.
type backendSkill struct {
	name, description string
	files             []skillFile
}

func (s backendSkill) uri() string { return "skill://" + s.name + "/SKILL.md" }

// backendSkills are the skills served. release-notes is there so that a
// policy can allow one skill and not the other.
var backendSkills = []backendSkill{
	{
		name: "pdf-processing", description: "Extract, fill, and assemble PDF documents",
		files: []skillFile{
			{"skill://pdf-processing/SKILL.md", "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n# PDF processing\n\nFill forms as references/FORMS.md says.\n"},
			{"skill://pdf-processing/references/FORMS.md", "# Forms\n\nUse pdftk to fill a form.\n"},
		},
	},
	{
		name: "release-notes", description: "Write release notes from a changelog",
		files: []skillFile{
			{"skill://release-notes/SKILL.md", "---\nname: release-notes\ndescription: Write release notes from a changelog\n---\n# Release notes\n\nOne line a change.\n"},
		},
	},
}

// entry is s as skills/list and skills/get give it.
func (s backendSkill) entry() map[string]any {
	var res []any
	for _, f := range s.files {
		sum := sha256.Sum256([]byte(f.text))
		res = append(res, map[string]any{"uri": f.uri, "digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(f.text)})
	}
	return map[string]any{"uri": s.uri(), "frontmatter": map[string]any{"name": s.name, "description": s.description}, "resources": res}
}

type listSkillsParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type listSkillsResult struct {
	mcp.ResultBase
	ResultType string           `json:"resultType"`
	TTLMs      int              `json:"ttlMs"`
	CacheScope string           `json:"cacheScope"`
	Skills     []map[string]any `json:"skills"`
}

type getSkillParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

type getSkillResult struct {
	mcp.ResultBase
	ResultType string         `json:"resultType"`
	TTLMs      int            `json:"ttlMs"`
	CacheScope string         `json:"cacheScope"`
	Skill      map[string]any `json:"skill"`
}

type readDirParams struct {
	mcp.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

type readDirResult struct {
	mcp.ResultBase
	ResultType string          `json:"resultType"`
	Resources  []*mcp.Resource `json:"resources"`
}

// addSkills serves the skills: their files as resources, and the
// extension's methods.
func addSkills(server *mcp.Server) error {
	for _, s := range backendSkills {
		for i, f := range s.files {
			r := &mcp.Resource{URI: f.uri, Name: f.uri[strings.LastIndex(f.uri, "/")+1:], MIMEType: "text/markdown"}
			if i == 0 {
				r.Name, r.Description = s.name, s.description
			}
			text := f.text
			server.AddResource(r, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, MIMEType: "text/markdown", Text: text}}}, nil
			})
		}
	}
	if err := mcp.AddReceivingCustomMethod(server, "skills/list", func(context.Context, *mcp.ServerSession, *listSkillsParams) (*listSkillsResult, error) {
		res := &listSkillsResult{ResultType: "complete", CacheScope: "public"}
		for _, s := range backendSkills {
			res.Skills = append(res.Skills, s.entry())
		}
		return res, nil
	}); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(server, "skills/get", func(_ context.Context, _ *mcp.ServerSession, p *getSkillParams) (*getSkillResult, error) {
		for _, s := range backendSkills {
			if s.uri() == p.URI {
				return &getSkillResult{ResultType: "complete", CacheScope: "public", Skill: s.entry()}, nil
			}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no skill " + p.URI}
	}); err != nil {
		return err
	}
	return mcp.AddReceivingCustomMethod(server, "resources/directory/read", func(_ context.Context, _ *mcp.ServerSession, p *readDirParams) (*readDirResult, error) {
		children, ok := directory(strings.TrimSuffix(p.URI, "/"))
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: p.URI + " is not a directory"}
		}
		return &readDirResult{ResultType: "complete", Resources: children}, nil
	})
}

// directory returns the direct children of dir, a directory of a skill.
func directory(dir string) ([]*mcp.Resource, bool) {
	var out []*mcp.Resource
	seen := map[string]bool{}
	found := false
	for _, s := range backendSkills {
		for _, f := range s.files {
			rest, ok := strings.CutPrefix(f.uri, dir+"/")
			if !ok {
				continue
			}
			found = true
			name, _, sub := strings.Cut(rest, "/")
			switch {
			case sub && !seen[name]:
				seen[name] = true
				out = append(out, &mcp.Resource{URI: dir + "/" + name, Name: name, MIMEType: "inode/directory"})
			case !sub:
				out = append(out, &mcp.Resource{URI: f.uri, Name: name, MIMEType: "text/markdown"})
			}
		}
	}
	return out, found
}
