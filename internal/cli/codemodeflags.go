// The --code-mode flags of tools, exec, resume, agent and serve.
package cli

import "github.com/conduitmcp/conduit/adapters"

// codeModeFlags offer run_code instead of the tools (beside them with
// --code-mode-direct).
type codeModeFlags struct {
	on, direct bool
}

func (c *codeModeFlags) register(fs *flagSet) {
	fs.BoolVar(&c.on, "code-mode", false, "offer the model run_code, which runs JavaScript (TypeScript annotations allowed) calling the tools, each call governed by the policy as conduit/<server>/<tool> would be; the policy must allow conduit/run_code")
	fs.BoolVar(&c.direct, "code-mode-direct", false, "with --code-mode, offer the tools themselves beside run_code")
}

// options are the adapters' CodeModeOptions.
func (c *codeModeFlags) options() adapters.CodeModeOptions {
	return adapters.CodeModeOptions{On: c.on, Direct: c.on && c.direct}
}
