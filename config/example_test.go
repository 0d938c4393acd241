package config_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/config"
)

func ExampleParse() {
	cfg, err := config.Parse([]byte(`{
	  "mcpServers": {
	    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
	    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t0ken"}}
	  },
	  "policy": [
	    {"deny": ["remote/*"], "tainted": ["files"]},
	    {"allow": ["*"]}
	  ]
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range cfg.Servers {
		fmt.Printf("%s: command %q args %q url %q\n", s.ID, s.Command, s.Args, s.URL)
	}
	d, _, _ := cfg.Policy.Decide(&conduit.Call{Server: "remote", Tool: "post", Taint: []string{"files"}})
	fmt.Println(d)
	// A secret written in the file works, and is worth a word.
	fmt.Println(cfg.Warnings)

	_, err = config.Parse([]byte(`{"mcpServers": {"files": {"comand": "npx"}}}`))
	fmt.Println(err)
	// Output:
	// files: command "npx" args ["-y" "@modelcontextprotocol/server-filesystem" "/tmp"] url ""
	// remote: command "" args [] url "https://mcp.example.com/mcp"
	// deny
	// [server "remote": header "Authorization" is written in the file: keep the secret in an environment variable and write ${env:NAME} in its place]
	// config: mcpServers: server "files": unknown key "comand"
}

// ${env:NAME} reads a value from the environment, so that the file holds
// no secret.
func ExampleParse_env() {
	os.Setenv("REMOTE_TOKEN", "t0ken") // as the shell would
	cfg, err := config.Parse([]byte(`{"mcpServers": {
	  "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:REMOTE_TOKEN}"}}
	}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Servers[0].Headers["Authorization"], len(cfg.Warnings))

	_, err = config.Parse([]byte(`{"mcpServers": {
	  "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:REMOTE_TOKN}"}}
	}}`))
	fmt.Println(err)
	fmt.Println(errors.Is(err, config.ErrEnvNotSet))
	// Output:
	// Bearer t0ken 0
	// config: mcpServers: server "remote": headers: "Authorization": ${env:REMOTE_TOKN} is not set
	// true
}

// A stdio server's child gets an allowlist of this process's environment
// (HOME, PATH, the locale...), what "inheritEnv" names and its "env":
// nothing else, so secrets in this process's environment stay here.
func ExampleParse_inheritEnv() {
	cfg, err := config.Parse([]byte(`{"mcpServers": {
	  "cloud": {"command": "cloud-mcp", "inheritEnv": ["AWS_PROFILE", "KUBECONFIG"], "env": {"LOG_LEVEL": "info"}}
	}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Servers[0].InheritEnv, cfg.Servers[0].Env)

	_, err = config.Parse([]byte(`{"mcpServers": {"remote": {"url": "https://mcp.example.com/mcp", "inheritEnv": ["HOME"]}}}`))
	fmt.Println(err)
	// Output:
	// [AWS_PROFILE KUBECONFIG] map[LOG_LEVEL:info]
	// config: mcpServers: server "remote": "args", "env", "inheritEnv" and "cwd" are for a "command", not a "url"
}
