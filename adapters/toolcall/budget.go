package toolcall

// DefaultMaxResultTokens is AnswerOptions.MaxResultTokens's default:
// 25,000 tokens, as Claude Code's MAX_MCP_OUTPUT_TOKENS, an eighth of a
// 200,000-token context.
const DefaultMaxResultTokens = 25000

// Budget is the result budget of one answer, as a provider's driver
// writes it (driver.Pending.Write).
type Budget struct {
	// Tokens is the most tokens of the result the model reads, its notice
	// aside. 0 means DefaultMaxResultTokens, negative no budget.
	Tokens int
	// ReadTool and Ref, when set, name the tool that reads the whole of a
	// cut result, and the result's reference there. The notice tells the
	// model to call it. An adapters.Conversation with its read tool sets
	// them.
	ReadTool, Ref string
}

// Resolved returns the budget in tokens, 0 for none.
func (b Budget) Resolved() int {
	switch {
	case b.Tokens == 0:
		return DefaultMaxResultTokens
	case b.Tokens < 0:
		return 0
	}
	return b.Tokens
}

// Budgeted is what a result budget did to one answer.
type Budgeted struct {
	// Budget is the budget applied, in tokens; 0 for none.
	Budget int `json:"budget"`
	// Tokens is the estimate of the whole result as the model would read
	// it. Kept is the estimate of what it reads, the notice aside.
	Tokens int `json:"tokens"`
	Kept   int `json:"kept"`
	// Cut reports that the result was over its budget and was cut.
	Cut bool `json:"cut"`
	// Ref is the reference of the whole result, kept for the read tool,
	// when it was cut and kept.
	Ref string `json:"ref,omitempty"`
}
