// A skill's digest, which pins keep as they keep a tool's definition. A
// skill changed after review is then refused.
package skills

import (
	"cmp"
	"slices"

	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/pins"
)

// Digest returns the digest of what a skill is, as listed: its URI, its
// frontmatter and every file's URI, digest and size. Each file read is
// checked against the listing, so pinning this digest pins the files.
// A skill with "dynamic" files has no manifest and no digest ("").
func (sk *Skill) Digest() string {
	if sk == nil || sk.Dynamic {
		return ""
	}
	files := slices.Clone(sk.Files)
	slices.SortFunc(files, func(a, b File) int { return cmp.Compare(a.URI, b.URI) })
	list := make([]any, len(files))
	for i, f := range files {
		list[i] = map[string]any{"uri": f.URI, "digest": f.Digest, "size": f.Size}
	}
	c, err := pins.CanonicalJSON(map[string]any{"uri": sk.URI, "frontmatter": sk.Frontmatter, "resources": list})
	if err != nil {
		// A frontmatter value canonical JSON cannot write pins nothing.
		return ""
	}
	return digest.Of(c)
}
