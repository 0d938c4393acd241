package adaptertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/tokens"
)

// The result budget's checks of the conformance suite. The fake reads
// back from the conversation what the model reads of an answer. That is
// within the budget plus its notice. This holds for text, JSON and
// structured results, per result and per turn. The read tool reads the
// rest.

// noticeStart begins the notice of a cut result.
const noticeStart = "[conduit: the result was cut"

// cutAnswer splits what the model reads of a cut answer into what was
// kept and the notice.
func cutAnswer(t *testing.T, a Answered) (kept, notice string) {
	t.Helper()
	i := strings.LastIndex(a.Text, noticeStart)
	if i < 0 {
		t.Fatalf("answer %s has no notice: %.200q", a.ID, a.Text)
	}
	return strings.TrimSuffix(a.Text[:i], "\n"), a.Text[i:]
}

// resultBudget: each result over its budget reaches the model as its
// beginning, within the budget, then the notice. A JSON text and a
// structuredContent value are cut into valid JSON. A small result beside
// them is whole. With no options, the default budget applies.
func (s *suite) resultBudget(t *testing.T) {
	l := newLab(t)
	o := &adapters.ConversationOptions{}
	o.Answers.MaxResultTokens = 1000
	exec := s.execute(t, s.conversation(t, l, o), s.script(t,
		toolcall.Raw{ID: "call_text", Name: bigTool, Args: map[string]any{"lines": 3000.0}},
		toolcall.Raw{ID: "call_json", Name: bigTool, Args: map[string]any{"lines": 3000.0, "as": "json"}},
		toolcall.Raw{ID: "call_structured", Name: bigTool, Args: map[string]any{"lines": 3000.0, "as": "structured"}},
		toolcall.Raw{ID: "call_echo", Name: echoTool, Args: map[string]any{"message": "small"}},
	))
	answers := s.answered(exec.Results)
	for i, a := range answers[:3] {
		b := exec.Budgets[i]
		if exec.Errors[i] != nil || a.Error || !b.Cut || b.Budget != 1000 || b.Kept > 1000 || b.Tokens < 20000 {
			t.Fatalf("answer %s: %+v, error %v", a.ID, b, exec.Errors[i])
		}
		kept, notice := cutAnswer(t, a)
		if n := tokens.Text(kept); n > 1000 {
			t.Errorf("answer %s: the model reads %d tokens of the result, over the budget of 1000", a.ID, n)
		}
		if !strings.Contains(notice, "budget of 1000 tokens") || !strings.Contains(notice, "Ask for less") {
			t.Errorf("answer %s: notice %q", a.ID, notice)
		}
		if i == 0 {
			if !strings.HasPrefix(kept, bigLine(1)+"\n") || !strings.Contains(notice, "lines") {
				t.Errorf("the text does not keep its beginning: %.80q; notice %q", kept, notice)
			}
		} else if !json.Valid([]byte(kept)) || !strings.Contains(notice, "The JSON kept is valid") {
			t.Errorf("answer %s: the JSON kept is not valid: %.80q ... %.80q", a.ID, kept, kept[max(len(kept)-80, 0):])
		}
	}
	if a := answers[3]; exec.Budgets[3].Cut || a.Text != "Echo: small" {
		t.Errorf("a small result beside them: %+v %+v", a, exec.Budgets[3])
	}

	// No options: DefaultMaxResultTokens.
	exec = s.execute(t, s.conversation(t, l, nil), s.script(t, toolcall.Raw{ID: "call_long", Name: bigTool, Args: map[string]any{"lines": 20000.0}}))
	kept, _ := cutAnswer(t, s.answered(exec.Results)[0])
	if b := exec.Budgets[0]; !b.Cut || b.Budget != adapters.DefaultMaxResultTokens || tokens.Text(kept) > adapters.DefaultMaxResultTokens {
		t.Errorf("the default budget: %+v, %d tokens read", b, tokens.Text(kept))
	}
}

// turnBudget: the results of one response share the turn's budget
// max-min fairly. A small one keeps all of it. The large ones share the
// rest equally. Together they stay within it.
func (s *suite) turnBudget(t *testing.T) {
	l := newLab(t)
	o := &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Budget: adapters.BudgetOptions{MaxTurnTokens: 3000}}}
	o.Answers.MaxResultTokens = 2000
	var calls []toolcall.Raw
	for i := range 3 {
		calls = append(calls, toolcall.Raw{ID: fmt.Sprint("call_big_", i), Name: bigTool, Args: map[string]any{"lines": 2000.0}})
	}
	calls = append(calls, toolcall.Raw{ID: "call_echo", Name: echoTool, Args: map[string]any{"message": "small"}})
	exec := s.execute(t, s.conversation(t, l, o), s.script(t, calls...))
	answers := s.answered(exec.Results)
	total := 0
	for i, a := range answers[:3] {
		b := exec.Budgets[i]
		kept, _ := cutAnswer(t, a)
		if !b.Cut || b.Budget > 1000 || b.Budget < 990 || tokens.Text(kept) > b.Budget {
			t.Errorf("answer %s: %+v, %d tokens read", a.ID, b, tokens.Text(kept))
		}
		total += b.Kept
	}
	if total+exec.Budgets[3].Kept > 3000 || answers[3].Text != "Echo: small" || exec.Budgets[3].Cut {
		t.Errorf("the turn: %d tokens of the large results, the small one %+v", total, exec.Budgets[3])
	}
}

// readTool: a Conversation with its read tool offers read_result. It
// keeps what its budget cut. The model reads the rest by lines and by
// pattern, nothing sent to the server. A result not kept is an error
// answer that says so.
func (s *suite) readTool(t *testing.T) {
	l := newLab(t)
	o := &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true}}
	o.Answers.MaxResultTokens = 1000
	conv := s.conversation(t, l, o)
	if _, ok := conv.Listing().ToolSet.Lookup(adapters.ReadToolName); !ok || !strings.Contains(string(marshal(t, conv.Tools())), adapters.ReadToolName) {
		t.Fatalf("read_result is not offered")
	}
	exec := s.execute(t, conv, s.script(t, toolcall.Raw{ID: "call_big", Name: bigTool, Args: map[string]any{"lines": 3000.0}}))
	ref := exec.Budgets[0].Ref
	_, notice := cutAnswer(t, s.answered(exec.Results)[0])
	if ref == "" || !strings.Contains(notice, fmt.Sprintf("call %s with result %q", adapters.ReadToolName, ref)) {
		t.Fatalf("ref %q, notice %q", ref, notice)
	}
	_, sent := l.sentSince(0)
	exec = s.execute(t, conv, s.script(t,
		toolcall.Raw{ID: "call_lines", Name: adapters.ReadToolName, Args: map[string]any{"result": ref, "line": 2500.0, "lines": 3.0}},
		toolcall.Raw{ID: "call_grep", Name: adapters.ReadToolName, Args: map[string]any{"result": ref, "pattern": "^line 7[0-9] "}},
		toolcall.Raw{ID: "call_gone", Name: adapters.ReadToolName, Args: map[string]any{"result": "R-NOTKEPT"}},
	))
	answers := s.answered(exec.Results)
	if a := answers[0]; a.Error || !strings.Contains(a.Text, "lines 2500-2502 of 3000") || !strings.Contains(a.Text, bigLine(2502)) || strings.Contains(a.Text, bigLine(2503)) {
		t.Errorf("by lines: %q", a.Text)
	}
	if a := answers[1]; a.Error || !strings.Contains(a.Text, "10 lines match") || !strings.Contains(a.Text, "to the end]\n70: "+bigLine(70)+"\n") || strings.Contains(a.Text, bigLine(80)) {
		t.Errorf("by pattern: %.300q", a.Text)
	}
	if a := answers[2]; !a.Error || !strings.Contains(a.Text, "not kept") {
		t.Errorf("a result not kept: %+v", a)
	}
	if after, n := l.sentSince(sent); len(after) != 0 || n != sent {
		t.Errorf("read_result sent %v to the server", after)
	}
	if taint := exec.Taint(nil); slices.Contains(taint, adapters.ReadToolServer) {
		t.Errorf("read_result tainted the conversation: %v", taint)
	}
}
