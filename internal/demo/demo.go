package demo

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// Config is the demo's mcp.json: the two servers, as a file would start them
// with `conduit demo-server NAME`, and the policy. The demo itself runs the
// servers in-process instead.
//
//go:embed mcp.json
var Config []byte

//go:embed turns/*.json
var turnFiles embed.FS

// Principal is the user the demo's calls are made for.
const Principal = "demo-user"

// Prompt is what the demo's user asked the model.
const Prompt = "Find my pasta note, read the recipe it links to, and save a shopping list for it."

// Report is what one play of the demo did, for rendering.
type Report struct {
	Config  json.RawMessage `json:"config"`
	Prompt  string          `json:"prompt"`
	Servers []ServerReport  `json:"servers"`
	// Tools are the tools the hub offers, in the listing's order.
	Tools []ToolReport `json:"tools"`
	Turns []Turn       `json:"turns"`
}

// ServerReport is one server's status.
type ServerReport struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Tools int    `json:"tools"`
}

// ToolReport is one offered tool.
type ToolReport struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Description string `json:"description"`
}

// Turn is one recorded model turn, played through the adapters.
type Turn struct {
	Provider string `json:"provider"`
	Title    string `json:"title"`
	// Tools is adapters.Tools' listing for the provider.
	Tools     []map[string]any      `json:"tools"`
	NullPaths map[string][][]string `json:"null_paths,omitempty"`
	Fallbacks []Fallback            `json:"fallbacks,omitempty"`
	Warnings  []toolcall.Warning    `json:"warnings,omitempty"`
	Response  json.RawMessage       `json:"response"`
	Approver  map[string]string     `json:"approver,omitempty"`
	Taint     []string              `json:"taint_before"`
	Calls     []CallReport          `json:"calls"`
	Results   []map[string]any      `json:"results"`
	Halted    bool                  `json:"halted"`
	After     []string              `json:"taint_after"`
}

// Fallback is a tool OpenAI strict mode could not take, sent with
// "strict": false.
type Fallback struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// CallReport is what happened to one call of a turn.
type CallReport struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
	// Sent, when it differs from Args, is what reached the server (strict
	// mode's nulls removed).
	Sent map[string]any `json:"sent,omitempty"`
	// Decision is the policy's: allow, ask or deny; empty when the call
	// never reached the policy (an unknown tool).
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
	// Approval is the scripted approver's answer to an ask: allow, deny
	// or halt.
	Approval string `json:"approval,omitempty"`
	// Outcome is ok (a result, isError ones included) or the
	// error kind of the failure (conduit.Error.String).
	Outcome string `json:"outcome"`
	Message string `json:"message,omitempty"`
}

type turnFile struct {
	Provider string            `json:"provider"`
	Title    string            `json:"title"`
	Approver map[string]string `json:"approver"`
	Response json.RawMessage   `json:"response"`
}

// Play runs the demo: the servers in-process, a hub with the demo's policy,
// and each recorded turn through adapters.Tools and adapters.ExecuteToolCalls,
// with the taint of each turn carried into the next. Approvals are answered
// by a script, never by a person.
func Play(ctx context.Context) (*Report, error) { return PlayWith(ctx, nil) }

// Options are what PlayWith takes beside the demo's own. The zero value is
// fine.
type Options struct {
	// Trace, when set, is told of the hub's events too.
	Trace *conduit.Trace
	// ListingTrace, when set, is told of the listings' events too.
	ListingTrace *adapters.Trace
}

// PlayWith is Play with o's traces beside the demo's own; o may be nil.
func PlayWith(ctx context.Context, o *Options) (*Report, error) {
	if o == nil {
		o = &Options{}
	}
	cfg, err := config.Parse(Config)
	if err != nil {
		return nil, fmt.Errorf("the demo's config: %w", err)
	}
	turns, err := loadTurns()
	if err != nil {
		return nil, err
	}
	srvs, stop, err := InProcess(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()

	var mu sync.Mutex
	script := map[string]string{}
	decisions := map[string]CallReport{}
	hub, err := conduit.NewHub(ctx, srvs, &conduit.Options{Policy: cfg.Policy,
		Approver: func(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
			mu.Lock()
			defer mu.Unlock()
			answer := script[req.Call.Exposed]
			d := decisions[req.Call.Exposed]
			d.Approval = answer
			decisions[req.Call.Exposed] = d
			switch answer {
			case "allow":
				return conduit.Approve()
			case "halt":
				return conduit.RejectAndHalt("The user stopped the agent.")
			}
			return conduit.Reject("The user declined this call.")
		},
		Trace: withTrace(o.Trace, &conduit.Trace{Decided: func(di conduit.StepInfo) {
			mu.Lock()
			defer mu.Unlock()
			r := decisions[di.Call.Exposed]
			r.Decision, r.Rule = di.Decision.String(), di.Rule.String()
			if !di.Matched {
				r.Rule = "no rule matched"
			}
			r.Sent = maps.Clone(di.Call.Args)
			decisions[di.Call.Exposed] = r
		}}),
		ConnectTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	defer hub.Close()

	rep := &Report{Config: Config, Prompt: Prompt}
	ts, err := hub.ListToolsFor(ctx, &conduit.ListOptions{Principal: Principal})
	if err != nil {
		return nil, err
	}
	for st := range slices.Values(hub.Status()) {
		rep.Servers = append(rep.Servers, ServerReport{ID: st.ID, State: st.State.String(), Tools: st.Tools})
	}
	for t := range ts.All() {
		rep.Tools = append(rep.Tools, ToolReport{Name: t.Exposed, Server: t.Server, Tool: t.Name, Description: t.Description})
	}

	var taint []string
	for _, tf := range turns {
		p, err := adapters.ParseProvider(tf.Provider)
		if err != nil {
			return nil, fmt.Errorf("turn %s: %w", tf.Provider, err)
		}
		var fallbacks []Fallback
		listing, err := adapters.Tools(ctx, hub, p, &adapters.ToolsOptions{
			Principal: Principal,
			Listing:   adapters.ListingOptions{CacheLast: true},
			Trace: withListingTrace(o.ListingTrace, &adapters.Trace{StrictFallback: func(f adapters.StrictFallbackInfo) {
				fallbacks = append(fallbacks, Fallback{f.Tool, strictReason(f.Err)})
			}}),
		})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		script = tf.Approver
		clear(decisions)
		mu.Unlock()
		exec, err := adapters.ExecuteToolCalls(ctx, hub, p, []byte(tf.Response), &adapters.ExecOptions{
			ToolSet: listing.ToolSet, NullPaths: listing.NullPaths,
			TurnOptions: adapters.TurnOptions{Principal: Principal, Taint: taint,
				// One at a time, so the story reads in the model's order.
				MaxConcurrency: 1},
		})
		if err != nil {
			return nil, fmt.Errorf("turn %s: %w", tf.Provider, err)
		}
		raws, _ := p.Parse([]byte(tf.Response))
		turn := Turn{
			Provider: tf.Provider, Title: tf.Title, Tools: listing.Tools, Fallbacks: fallbacks,
			Warnings: listing.Warnings, Response: tf.Response, Approver: tf.Approver,
			Taint: jsonv.NonNil(slices.Clone(taint)), Results: exec.Results, Halted: exec.Halted,
		}
		if len(listing.NullPaths) > 0 {
			turn.NullPaths = map[string][][]string{}
			for name, nps := range listing.NullPaths {
				for _, np := range nps {
					turn.NullPaths[name] = append(turn.NullPaths[name], []string(np))
				}
			}
		}
		mu.Lock()
		for i, r := range raws {
			c := decisions[r.Name]
			c.ID, c.Name = r.ID, r.Name
			c.Args = argsObject(r.Args)
			if c.Sent != nil && reflect.DeepEqual(c.Sent, c.Args) {
				c.Sent = nil
			}
			c.Outcome, c.Message = outcome(exec.Errors[i])
			turn.Calls = append(turn.Calls, c)
		}
		mu.Unlock()
		taint = exec.Taint(taint)
		turn.After = jsonv.NonNil(slices.Clone(taint))
		rep.Turns = append(rep.Turns, turn)
		if exec.Halted {
			break
		}
	}
	return rep, nil
}

func strictReason(err error) string {
	var se *driver.StrictError
	if errors.As(err, &se) {
		return se.Reason + " (at " + se.Pointer + ")"
	}
	return err.Error()
}

func outcome(err error) (string, string) {
	if err == nil {
		return "ok", ""
	}
	var ce *conduit.Error
	if errors.As(err, &ce) {
		return ce.Kind.String(), ce.Message
	}
	return "error", err.Error()
}

func loadTurns() ([]turnFile, error) {
	names, err := fs.Glob(turnFiles, "turns/*.json")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []turnFile
	for _, n := range names {
		data, err := turnFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var tf turnFile
		if err := json.Unmarshal(data, &tf); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, tf)
	}
	return out, nil
}

// argsObject is a call's arguments as the model wrote them, decoded.
func argsObject(v any) map[string]any {
	switch a := v.(type) {
	case map[string]any:
		return a
	case json.RawMessage:
		var m map[string]any
		_ = json.Unmarshal(a, &m)
		return m
	}
	return nil
}
