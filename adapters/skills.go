// Offering a loaded skill to a model. Its instructions become a message
// of the conversation, in the provider's shape.
package adapters

import (
	"errors"

	"github.com/conduitmcp/conduit/internal/textsafe"
	"github.com/conduitmcp/conduit/skills"
)

// SkillMessage is a loaded skill offered to the model. It is a user
// message of p's conversation, as [Wire.Prompt] makes one. It names the
// skill and its server and holds SKILL.md's text. Append it to the
// conversation before the turn that needs it. ls comes from
// [skills.Load], which the policy allowed. Load verified its digest,
// frontmatter, hidden characters and pins. This only shapes it.
func SkillMessage(p Provider, ls *skills.Loaded) (map[string]any, error) {
	if _, err := p.valid(); err != nil {
		return nil, err
	}
	if ls == nil || ls.Skill == nil {
		return nil, errors.New("adapters: no loaded skill")
	}
	// The names are the server's text: shown, never able to break a line.
	head := "Skill " + textsafe.EscapeLine(ls.Name) + " (from server " + textsafe.EscapeLine(ls.Server) +
		"). Its instructions follow; follow them where they apply to the task.\n\n"
	return p.Wire().Prompt(head + ls.Instructions), nil
}
