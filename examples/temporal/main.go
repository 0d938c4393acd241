// Command temporal is an agent whose loop is a Temporal workflow: a chat
// survives deploys and crashed workers, runs on any of them, and waits as
// long as it takes (days) for the user to approve the calls its policy
// asks about, with conduit's governance on every call.
//
//	temporal worker -config mcp.json [-redis redis://127.0.0.1:6379/0]
//	temporal start -id CHAT -prompt "..." [-user ID]
//	temporal pending -id CHAT                     the calls waiting, as JSON
//	temporal approve -id CHAT -call CALL
//	temporal deny -id CHAT -call CALL [-reason TEXT] [-halt]
//	temporal result -id CHAT                      waits for the answer
//
// Every command takes -temporal HOST:PORT (default 127.0.0.1:7233, as
// `temporal server start-dev` serves) and -namespace. Run as many workers
// as you like, and restart them when you like; give them the same -redis,
// so that a call retried on another worker is never sent twice. A worker
// reads ANTHROPIC_API_KEY, and asks -base-url (the API, or a compatible
// endpoint) for -model.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/redisstore"
	"github.com/conduitmcp/conduit/temporalconduit"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	hostPort := fs.String("temporal", "127.0.0.1:7233", "the Temporal frontend")
	namespace := fs.String("namespace", "default", "the Temporal namespace")
	id := fs.String("id", "", "the chat (the workflow's id)")
	var err error
	switch cmd {
	case "worker":
		configPath := fs.String("config", "mcp.json", "the MCP configuration file (mcpServers and a policy)")
		redisURL := fs.String("redis", "", "the store of claims every worker shares (redis://HOST:PORT/DB)")
		baseURL := fs.String("base-url", adapters.Anthropic.Wire().BaseURL, "the Anthropic API's base URL")
		model := fs.String("model", "claude-sonnet-4-5", "the Claude model")
		fs.Parse(args)
		err = runWorker(*hostPort, *namespace, *configPath, *redisURL, &Model{BaseURL: *baseURL, Model: *model,
			Key: os.Getenv("ANTHROPIC_API_KEY"), HTTP: http.DefaultClient})
	case "start":
		prompt := fs.String("prompt", "", "what to ask the agent")
		user := fs.String("user", "anonymous", "who asks (the conversation's principal)")
		fs.Parse(args)
		err = withClient(*hostPort, *namespace, func(ctx context.Context, c client.Client) error {
			_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: *id, TaskQueue: taskQueue}, agentWorkflow,
				AgentInput{Prompt: *prompt, Principal: *user})
			return err
		})
	case "pending":
		fs.Parse(args)
		err = withClient(*hostPort, *namespace, func(ctx context.Context, c client.Client) error {
			v, err := c.QueryWorkflow(ctx, *id, "", temporalconduit.QueryPending)
			if err != nil {
				return err
			}
			var ps []adapters.Pending
			if err := v.Get(&ps); err != nil {
				return err
			}
			return json.NewEncoder(os.Stdout).Encode(ps)
		})
	case "approve", "deny":
		call := fs.String("call", "", "the call to decide (its id, as pending lists it)")
		reason := fs.String("reason", "", "why it is denied, for the model")
		halt := fs.Bool("halt", false, "deny, and stop the agent")
		fs.Parse(args)
		d := adapters.Ruling{Allow: cmd == "approve", Reason: *reason, Halt: *halt}
		err = withClient(*hostPort, *namespace, func(ctx context.Context, c client.Client) error {
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: *id, UpdateName: temporalconduit.UpdateDecide,
				Args: []any{map[string]adapters.Ruling{*call: d}}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err != nil {
				return err
			}
			return h.Get(ctx, nil)
		})
	case "result":
		fs.Parse(args)
		err = withClient(*hostPort, *namespace, func(ctx context.Context, c client.Client) error {
			var answer string
			if err := c.GetWorkflow(ctx, *id, "").Get(ctx, &answer); err != nil {
				return err
			}
			fmt.Println(answer)
			return nil
		})
	default:
		usage()
	}
	if err != nil {
		log.Fatal(err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: temporal worker|start|pending|approve|deny|result [flags]")
	os.Exit(2)
}

func withClient(hostPort, namespace string, f func(context.Context, client.Client) error) error {
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace})
	if err != nil {
		return err
	}
	defer c.Close()
	return f(context.Background(), c)
}

// runWorker runs a worker until it is interrupted: a hub connected once,
// held for the worker's lifetime, whose approver defers every call the
// policy asks about to the user.
func runWorker(hostPort, namespace, configPath, redisURL string, m *Model) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	if cfg.Policy == nil {
		return errors.New(configPath + " has no policy")
	}
	var st store.Store
	if redisURL != "" {
		rs, err := redisstore.Open(redisURL, nil)
		if err != nil {
			return err
		}
		defer rs.Close()
		st = rs
	}
	hub, err := conduit.NewHub(context.Background(), cfg.Servers, &conduit.Options{Policy: cfg.Policy, LaxPolicy: cfg.LaxPolicy,
		Approver: conduit.DeferAll("waiting for the user's approval"), Store: st})
	if err != nil {
		return err
	}
	defer hub.Close()
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace})
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, taskQueue, worker.Options{})
	if err := register(w, hub, m, nil); err != nil {
		return err
	}
	return w.Run(worker.InterruptCh())
}
