package audit

import (
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The audit of one tool: the texts of its definition, and each rule
// applied to them, one finding per rule and text.

// text is one text of a definition.
type text struct {
	field string
	s     string
	prose bool // instruction rules apply; otherwise only invisible characters
}

func (a *auditor) tool(server string, t *mcp.Tool) []Finding {
	var out []Finding
	add := func(rule, field, msg, excerpt string) {
		for _, f := range out {
			if f.Rule == rule && f.Field == field {
				return // one finding per rule and text
			}
		}
		out = append(out, Finding{Rule: rule, Severity: ruleSeverity(rule), Server: server, Tool: t.Name, Field: field, Message: msg, Excerpt: excerpt})
	}
	texts := []text{{"name", t.Name, false}, {"title", t.Title, true}, {"description", t.Description, true}}
	if t.Annotations != nil {
		texts = append(texts, text{"annotations.title", t.Annotations.Title, true})
	}
	in, outSchema := jsonv.ObjectOf(t.InputSchema), jsonv.ObjectOf(t.OutputSchema)
	texts = schemaTexts(texts, "inputSchema", in, "", 0)
	texts = schemaTexts(texts, "outputSchema", outSchema, "", 0)
	for _, tx := range texts {
		if tx.s == "" {
			continue
		}
		if msg, ex, ok := invisibleChars(tx.s); ok {
			add(RuleInvisible, tx.field, msg, ex)
		}
		if !tx.prose {
			continue
		}
		c := clean(tx.s)
		l := strings.ToLower(c)
		if m := firstMatch(c, l, overridePatterns, true); m != nil {
			add(RuleOverride, tx.field, "tells the model to set its instructions aside", excerpt(c, m))
		}
		if m := firstMatch(c, l, concealPatterns, false); m != nil {
			add(RuleConceal, tx.field, "tells the model to keep something from the user", excerpt(c, m))
		}
		if m := tagPattern.first(c, l); m != nil {
			add(RuleHiddenTags, tx.field, "marks a block for the model with "+c[m[0]:m[1]], excerpt(c, m))
		}
		if m, home := sensitiveFile(c, l); m != nil && home {
			add(RuleSensitive, tx.field, "asks for a file of the user's home directory to be read or sent: "+c[m[0]:m[1]], excerpt(c, m))
		} else if m != nil {
			add(RuleSensitive, tx.field, "names a credential file: "+strings.TrimLeft(c[m[0]:m[1]], " '\"`(/~"), excerpt(c, m))
		} else if m := firstMatch(c, l, []pattern{credentialRequest}, true); m != nil {
			add(RuleSensitive, tx.field, "asks for the user's credentials to be read or passed on", excerpt(c, m))
		}
		if msg, m := a.shadowing(server, c); m != nil {
			add(RuleShadowing, tx.field, msg, excerpt(c, m))
		}
	}
	// Measured as the model would read it: the characters listing removes
	// do not count, so invisible padding neither makes a finding nor hides
	// how much is cut.
	if n := visibleLen(t.Description); n > toolcall.MaxDescription {
		sent := clean(toolcall.Description(t.Description))
		msg := fmt.Sprintf("the description is %d bytes", n)
		if raw := len(t.Description); raw != n {
			msg += fmt.Sprintf(" without the invisible characters conduit removes (%d with them)", raw)
		}
		add(RuleTooLong, "description", fmt.Sprintf("%s; conduit sends the first %d, so the model never reads the last %d", msg, toolcall.MaxDescription, n-toolcall.MaxDescription),
			excerpt(sent, []int{len(sent), len(sent)})+" [cut here]")
	}
	paramFindings(in, "inputSchema", 0, add)
	describedSideChannels(clean(t.Description), in, add)
	sortFindings(out)
	return out
}
