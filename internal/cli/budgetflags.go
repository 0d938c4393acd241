package cli

import (
	"fmt"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// budgetFlags are the result budget's flags. exec, call and agent apply the
// budget by default. serve has its own flag, off by default. A value of 0 or
// less is no budget, as a flag reads best. A server's own "maxResultTokens"
// in the configuration takes the flag's place for its tools.
type budgetFlags struct {
	result, turn int
}

func (b *budgetFlags) register(fs *flagSet, turn bool) {
	fs.IntVar(&b.result, "max-result-tokens", adapters.DefaultMaxResultTokens,
		"the most `tokens` of one tool result the model reads: a longer one is cut, and a notice ends it (0: no budget)")
	if turn {
		fs.IntVar(&b.turn, "max-turn-tokens", adapters.DefaultMaxTurnTokens,
			"the most `tokens` of all the results of one model response, shared among them (0: no budget)")
	}
}

// resultTokens is --max-result-tokens as the library takes it.
func (b *budgetFlags) resultTokens() int { return orNone(b.result) }

// options are the Conversation's budget options.
func (b *budgetFlags) options() adapters.BudgetOptions {
	return adapters.BudgetOptions{MaxTurnTokens: orNone(b.turn)}
}

// orNone is a flag's value as the library takes it. 0 or less is none, which
// the library writes as negative. The library's 0 is the default.
func orNone(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// budgetNote is what a call's outcome says of its budget: "" when the
// result was whole.
func budgetNote(b toolcall.Budgeted) string {
	if !b.Cut {
		return ""
	}
	s := fmt.Sprintf(" (cut to %d of about %d tokens", b.Kept, b.Tokens)
	if b.Ref != "" {
		s += "; the rest is read with read_result " + b.Ref
	}
	return s + ")"
}
