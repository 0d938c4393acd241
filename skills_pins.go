// Pinned skills: a loaded skill's digest is pinned as a tool's
// definition is, so a skill changed after review is refused.
package conduit

import (
	"cmp"
	"fmt"
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
	slices.SortFunc(files, func(a, b SkillFile) int { return cmp.Compare(a.URI, b.URI) })
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

// checkSkillPin refuses a skill that is not pinned, or whose listing is
// not the pinned one, when the hub has pins. Nothing is read first.
func (c *core) checkSkillPin(sk *Skill) error {
	if c.Pins == nil {
		return nil
	}
	want, ok := c.Pins.SkillDigest(sk.Server, sk.Name)
	got := sk.Digest()
	switch {
	case !ok:
		return newError(ErrUnknownTool, sk.Server, "skill:"+sk.Name,
			"The skill "+sk.Name+" is not offered: it is not pinned.",
			fmt.Errorf("%w: skill %s of server %s is new", pins.ErrNotPinned, sk.Name, sk.Server))
	case got != want:
		return newError(ErrUnknownTool, sk.Server, "skill:"+sk.Name,
			"The skill "+sk.Name+" is not offered: it changed since it was pinned.",
			fmt.Errorf("%w: skill %s of server %s is %s, pinned %s", pins.ErrNotPinned, sk.Name, sk.Server, got, want))
	}
	return nil
}
