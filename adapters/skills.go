// Offering a loaded skill to a model: its instructions as a message of
// the conversation, in the provider's shape.
package adapters

import (
	"errors"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/textsafe"
)

// SkillMessage is a loaded skill offered to the model: a user message of
// p's conversation (as [Wire.Prompt] makes one) that names the skill and
// its server and holds SKILL.md's text. Append it to the conversation
// before the turn that needs it. ls comes from [conduit.Hub.LoadSkill],
// which verified it (digest, frontmatter, hidden characters, pins) and
// which the policy allowed: this only shapes it.
func SkillMessage(p Provider, ls *conduit.LoadedSkill) (map[string]any, error) {
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
