// The agent: its workflow, its model activity, and a worker's setup.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/temporalconduit"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names recorded in the histories of running chats: stable.
const (
	agentWorkflow = "Agent"
	modelActivity = "CallModel"
	taskQueue     = "conduit-agent"
)

// maxTurns bounds the requests to the model of one chat.
const maxTurns = 20

// AgentInput is a chat: the user's prompt and who they are; a chat
// continued as new carries its conversation's state, its messages and
// the answers not yet sent to the model.
type AgentInput struct {
	Prompt    string                 `json:"prompt,omitempty"`
	Principal string                 `json:"principal"`
	State     *temporalconduit.State `json:"state,omitempty"`
	Messages  []any                  `json:"messages,omitempty"`
	Results   []map[string]any       `json:"results,omitempty"`
	Turns     int                    `json:"turns,omitempty"`
}

// ModelInput is the model activity's input: the tools offered, and the
// conversation so far with what to add to it first (the prompt, or the
// last turn's answers).
type ModelInput struct {
	Offer    temporalconduit.Offer `json:"offer"`
	Prompt   string                `json:"prompt,omitempty"`
	Messages []any                 `json:"messages"`
	Results  []map[string]any      `json:"results,omitempty"`
}

// ModelTurn is the model's turn: the items it adds to the conversation
// (the prompt or the answers, then the model's), its response, and
// whether it asked for tools.
type ModelTurn struct {
	Items    []any           `json:"items"`
	Response json.RawMessage `json:"response"`
	ToolUse  bool            `json:"toolUse"`
	Text     string          `json:"text"`
}

// Agent is the agent loop, a workflow: the model is asked by the
// application's activity, conduit's Conversation runs the calls, and a
// call the policy asks about waits for the user's decision (the update
// conduit.decide) for as long as it takes. Nothing in it depends on a
// worker staying up.
func Agent(ctx workflow.Context, in AgentInput) (string, error) {
	o := &temporalconduit.ConversationOptions{Provider: adapters.Anthropic, Principal: in.Principal}
	var conv *temporalconduit.Conversation
	var err error
	if in.State != nil {
		conv, err = temporalconduit.ResumeConversation(ctx, *in.State, o)
	} else {
		conv, err = temporalconduit.NewConversation(ctx, o)
	}
	if err != nil {
		return "", err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5}})
	messages, results, prompt := in.Messages, in.Results, in.Prompt
	for turns := in.Turns; turns < maxTurns; turns++ {
		var mt ModelTurn
		err := workflow.ExecuteActivity(actx, modelActivity, ModelInput{Offer: conv.Offer(), Prompt: prompt, Messages: messages,
			Results: results}).Get(ctx, &mt)
		if err != nil {
			return "", err
		}
		messages, results, prompt = append(messages, mt.Items...), nil, ""
		if !mt.ToolUse {
			return mt.Text, nil
		}
		turn, err := conv.Execute(ctx, mt.Response)
		if err != nil {
			return "", err
		}
		if turn.Halted {
			return "(the user stopped the agent)", nil
		}
		results = turn.Results
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			st := conv.State()
			return "", workflow.NewContinueAsNewError(ctx, agentWorkflow, AgentInput{Principal: in.Principal, State: &st,
				Messages: messages, Results: results, Turns: turns + 1})
		}
	}
	return fmt.Sprintf("(no answer after %d turns)", maxTurns), nil
}

// Model asks the Anthropic Messages API, with the tool definitions of
// the offer from conduit's activities on the same worker.
type Model struct {
	Conduit *temporalconduit.Activities
	BaseURL string
	Model   string
	Key     string
	HTTP    *http.Client
}

// CallModel is the model activity.
func (m *Model) CallModel(ctx context.Context, in ModelInput) (ModelTurn, error) {
	wire := adapters.Anthropic.Wire()
	tools, err := m.Conduit.Tools(ctx, in.Offer)
	if err != nil {
		return ModelTurn{}, err
	}
	var mt ModelTurn
	if in.Prompt != "" {
		mt.Items = append(mt.Items, wire.Prompt(in.Prompt))
	}
	mt.Items = append(mt.Items, wire.Answers(in.Results)...)
	body, err := json.Marshal(wire.Request(toolcall.Request{Model: m.Model, Tools: tools, Conversation: append(in.Messages, mt.Items...)}))
	if err != nil {
		return ModelTurn{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, wire.Endpoint(m.BaseURL, m.Model), bytes.NewReader(body))
	if err != nil {
		return ModelTurn{}, err
	}
	wire.Authorize(req.Header, m.Key)
	resp, err := m.HTTP.Do(req)
	if err != nil {
		return ModelTurn{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return ModelTurn{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return ModelTurn{}, fmt.Errorf("the model's API: %s: %s", resp.Status, raw)
	}
	var decoded map[string]any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return ModelTurn{}, err
	}
	turn, err := wire.Turn(decoded)
	if err != nil {
		return ModelTurn{}, err
	}
	mt.Items = append(mt.Items, turn.Items...)
	mt.Response, mt.ToolUse, mt.Text = raw, turn.ToolUse, turn.Text
	return mt, nil
}

// registry is a worker (or a test environment).
type registry interface {
	temporalconduit.ActivityRegistry
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// register registers the agent, its model activity and conduit's
// activities over hub on r.
func register(r registry, hub conduit.Source, m *Model, o *temporalconduit.Options) error {
	acts, err := temporalconduit.Register(r, hub, o)
	if err != nil {
		return err
	}
	m.Conduit = acts
	r.RegisterWorkflowWithOptions(Agent, workflow.RegisterOptions{Name: agentWorkflow})
	r.RegisterActivityWithOptions(m.CallModel, activity.RegisterOptions{Name: modelActivity})
	return nil
}
