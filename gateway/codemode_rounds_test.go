package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approvals asked inside run_code's code, through the gateway, with the
// real server-filesystem behind it.

// codeGateway serves run_code over server-filesystem (as fs) on dir,
// whose edits are asked about. The file log.txt holds "log:". Each
// edit that reaches the server adds a "+" to it.
func codeGateway(t *testing.T) (url, dir string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log.txt"), []byte("log:"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, args := testenv.Filesystem(t, dir)
	g := newGateway(t, []conduit.Server{{ID: "fs", Command: cmd, Args: args}}, &gateway.Options{
		Hub:       &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("fs/edit_file"), conduit.Allow("*"))},
		StateKeys: [][]byte{stateKey},
		CodeMode:  gateway.CodeModeOptions{On: true},
	})
	return serveGateway(t, g), dir
}

// logFile is log.txt's contents: "log:" and a "+" per edit sent.
func logFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// editLoop is code that edits log.txt n times in a loop, then reads it.
func editLoop(dir string, n int) map[string]any {
	return map[string]any{"code": `for (let i = 0; i < ` + string(rune('0'+n)) + `; i++) {
  await ` + editCall(dir) + `;
}
return await fs.read_text_file({path: ` + jsString(filepath.Join(dir, "log.txt")) + `});`}
}

func schemaText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsString(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

// editCall is the code of one edit of log.txt in dir: it adds a "+".
func editCall(dir string) string {
	return `fs.edit_file({path: ` + jsString(filepath.Join(dir, "log.txt")) + `, edits: [{oldText: "log:", newText: "log:+"}]})`
}

// roundsClient is alice's client of a fresh codeGateway that answers
// input-required results itself (see callRaw), and a bounded context.
func roundsClient(t *testing.T) (cs *mcp.ClientSession, ctx context.Context, dir string) {
	t.Helper()
	url, dir := codeGateway(t)
	cs, _ = newClient(t, url, aliceToken, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return cs, ctx, dir
}

// askLog is what an asking client was asked, in order.
type askLog struct {
	mu    sync.Mutex
	asked []*mcp.ElicitParams
}

// params are the elicitations asked so far.
func (l *askLog) params() []*mcp.ElicitParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.asked)
}

// askingClient is alice's session on url that answers elicitations itself,
// negotiating version ("" is the newest). answer gets the count asked so
// far, this one included.
func askingClient(t *testing.T, url, version string, answer func(n int) *mcp.ElicitResult) (*mcp.ClientSession, *askLog) {
	t.Helper()
	log := &askLog{}
	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			log.mu.Lock()
			defer log.mu.Unlock()
			log.asked = append(log.asked, req.Params)
			return answer(len(log.asked)), nil
		},
	})
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &sessionIDs{token: aliceToken}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, log
}

// acceptForRun accepts every ask for the rest of its run.
func acceptForRun(int) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"for_run": true}}
}

// TestCodeModeRounds: under 2026-07-28, an ask inside the code is an
// input-required result naming the nested call. Each retry runs the code
// again, replaying the edits made, and sends the approved one once. "For
// the rest of this run" allows the loop's later edits. A requestState
// sent again sends nothing again.
func TestCodeModeRounds(t *testing.T) {
	cs, ctx, dir := roundsClient(t)
	args := editLoop(dir, 3)

	res, err := callRaw(ctx, cs, "run_code", args, nil, "")
	st1 := askedApproval(t, res, err, "edit_file")
	p := res.InputRequests["conduit_approval"].(*mcp.ElicitParams)
	if !strings.Contains(p.Message, `"oldText":"log:"`) || !strings.Contains(schemaText(p.RequestedSchema), "for_run") {
		t.Errorf("the approval shows %q, schema %s", p.Message, p.RequestedSchema)
	}
	if got := logFile(t, dir); got != "log:" {
		t.Fatalf("before any approval the file is %q", got)
	}

	// Approved once: the first edit is sent, the second asks.
	res, err = callRaw(ctx, cs, "run_code", args, accept, st1)
	st2 := askedApproval(t, res, err, "edit_file")
	if got := logFile(t, dir); got != "log:+" {
		t.Fatalf("after one approval the file is %q, want one edit", got)
	}
	// Approved for the rest of the run: the first edit is replayed, not
	// sent; the second and third are sent.
	forRun := mcp.InputResponseMap{"conduit_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"for_run": true}}}
	res, err = callRaw(ctx, cs, "run_code", args, forRun, st2)
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("allowed for the run = %+v, %v", res, err)
	}
	first := resultText(res)
	if !strings.Contains(first, `log:+++`) || logFile(t, dir) != "log:+++" {
		t.Fatalf("answer %s, file %q; want three edits", first, logFile(t, dir))
	}
	// Each state sent again sends nothing again.
	for range 2 {
		res, err = callRaw(ctx, cs, "run_code", args, forRun, st2)
		if err != nil || resultText(res) != first {
			t.Errorf("the same state again = %q, %v; want the recorded answer", resultText(res), err)
		}
		res, err = callRaw(ctx, cs, "run_code", args, accept, st1)
		if err != nil || !res.NeedsInput() {
			t.Errorf("the first state again = %+v, %v; want its recorded question", res, err)
		}
	}
	if got := logFile(t, dir); got != "log:+++" {
		t.Errorf("after the states were sent again the file is %q", got)
	}
}

// TestCodeModeRoundsDenied: a declined nested call rejects in the code,
// which catches it; nothing is sent.
func TestCodeModeRoundsDenied(t *testing.T) {
	cs, ctx, dir := roundsClient(t)
	args := map[string]any{"code": `try {
  await ` + editCall(dir) + `;
  return "sent";
} catch (e) { return "caught: " + e.message; }`}
	res, err := callRaw(ctx, cs, "run_code", args, nil, "")
	st := askedApproval(t, res, err, "edit_file")
	res, err = callRaw(ctx, cs, "run_code", args, decline, st)
	if err != nil || res.IsError || !strings.Contains(resultText(res), "caught: ") || !strings.Contains(resultText(res), "declined") {
		t.Fatalf("declined = %+v %q, %v", res, resultText(res), err)
	}
	if got := logFile(t, dir); got != "log:" {
		t.Errorf("a declined edit reached the file: %q", got)
	}
}

// TestCodeModeSessionAsk: under 2025-11-25 an ask inside the code is an
// elicitation request on the client's session, naming the nested call,
// as the gateway's other asks are.
func TestCodeModeSessionAsk(t *testing.T) {
	url, dir := codeGateway(t)
	cs, log := askingClient(t, url, "2025-11-25", func(n int) *mcp.ElicitResult {
		if n == 1 {
			return &mcp.ElicitResult{Action: "accept"}
		}
		return &mcp.ElicitResult{Action: "decline"}
	})
	res := callTool(t, cs, "run_code", map[string]any{"code": `const out = [];
for (let i = 0; i < 2; i++) {
  try { await ` + editCall(dir) + `; out.push("sent") }
  catch (e) { out.push(e.message) }
}
return out;`})
	if asked := log.params(); len(asked) != 2 || !strings.Contains(asked[0].Message, "edit_file") || !strings.Contains(asked[0].Message, `"oldText":"log:"`) {
		t.Fatalf("asked %v", asked)
	}
	if out := resultText(res); !strings.Contains(out, `["sent","`) || !strings.Contains(out, "declined") {
		t.Errorf("answer %s", out)
	}
	if got := logFile(t, dir); got != "log:+" {
		t.Errorf("file %q, want the one approved edit", got)
	}
}

// TestCodeModeRoundsParallel: an ask among parallel calls. The others
// are made and recorded in the first round; the retry replays them and
// sends the approved edit once.
func TestCodeModeRoundsParallel(t *testing.T) {
	cs, ctx, dir := roundsClient(t)
	p := jsString(filepath.Join(dir, "log.txt"))
	args := map[string]any{"code": `const [before, edited, after] = await Promise.all([
  fs.read_text_file({path: ` + p + `}),
  ` + editCall(dir) + `,
  fs.get_file_info({path: ` + p + `}),
]);
return {before, after: typeof after};`}
	res, err := callRaw(ctx, cs, "run_code", args, nil, "")
	st := askedApproval(t, res, err, "edit_file")
	// The read was made; the file info too, unless the edit waited before
	// it started (it is then made by the retry).
	if p := res.InputRequests["conduit_approval"].(*mcp.ElicitParams); !strings.Contains(p.Message, "not made again: 2.") && !strings.Contains(p.Message, "not made again: 1.") {
		t.Errorf("the approval says %q; want the parallel calls made counted", p.Message)
	}
	res, err = callRaw(ctx, cs, "run_code", args, accept, st)
	if err != nil || res.IsError || !strings.Contains(resultText(res), `"before":{"content":"log:"}`) {
		t.Fatalf("accepted = %q, %v", resultText(res), err)
	}
	if got := logFile(t, dir); got != "log:+" {
		t.Errorf("file %q, want the one edit", got)
	}
}

// TestCodeModeRoundsTooLarge: a run that has read more than a
// requestState carries when it asks is answered with an error saying
// so; the edit is not sent.
func TestCodeModeRoundsTooLarge(t *testing.T) {
	cs, ctx, dir := roundsClient(t)
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("zebra ", 20000)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := callRaw(ctx, cs, "run_code", map[string]any{"code": `await fs.read_text_file({path: ` + jsString(big) + `});
await ` + editCall(dir) + `;`}, nil, "")
	if err != nil || !res.IsError || res.NeedsInput() || !strings.Contains(resultText(res), "too large to carry in a requestState") {
		t.Fatalf("answer %+v %q, %v", res, resultText(res), err)
	}
	if got := logFile(t, dir); got != "log:" {
		t.Errorf("file %q", got)
	}
}

// TestCodeModeRoundsSDKClient: the Go SDK's client answers the rounds
// itself (its multi-round-trip loop and elicitation handler): one
// CallTool, one question, the loop's edits sent once each.
func TestCodeModeRoundsSDKClient(t *testing.T) {
	url, dir := codeGateway(t)
	cs, log := askingClient(t, url, "", acceptForRun)
	if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
	res := callTool(t, cs, "run_code", editLoop(dir, 5))
	if res.IsError || !strings.Contains(resultText(res), "log:+++++") {
		t.Fatalf("answer %q", resultText(res))
	}
	if asked := log.params(); len(asked) != 1 {
		t.Errorf("asked %d times, want once for the run: %v", len(asked), asked)
	}
	if got := logFile(t, dir); got != "log:+++++" {
		t.Errorf("file %q, want five edits", got)
	}
}

// TestCodeModeSessionAskForRun: under 2025-11-25 the session's
// elicitation offers for_run too; accepting it asks once for a loop.
func TestCodeModeSessionAskForRun(t *testing.T) {
	url, dir := codeGateway(t)
	cs, log := askingClient(t, url, "2025-11-25", acceptForRun)
	for range 2 {
		res := callTool(t, cs, "run_code", editLoop(dir, 3))
		if res.IsError {
			t.Fatalf("answer %q", resultText(res))
		}
	}
	var schemas []string
	for _, p := range log.params() {
		schemas = append(schemas, schemaText(p.RequestedSchema))
	}
	// Once per run: the allowance ends with its run.
	if len(schemas) != 2 || !strings.Contains(schemas[0], "for_run") {
		t.Errorf("asked %d times (want once a run), schemas %q", len(schemas), schemas)
	}
	if got := logFile(t, dir); got != "log:++++++" {
		t.Errorf("file %q, want six edits", got)
	}
}

// TestCodeModeSessionAskForRunParallel: calls of one tool made in
// parallel ask one at a time, so "for the rest of this run" answered
// once allows the others.
func TestCodeModeSessionAskForRunParallel(t *testing.T) {
	url, dir := codeGateway(t)
	cs, log := askingClient(t, url, "2025-11-25", acceptForRun)
	edits := make([]string, 4)
	for i := range edits {
		edits[i] = editCall(dir)
	}
	res := callTool(t, cs, "run_code", map[string]any{"code": "await Promise.all([" + strings.Join(edits, ", ") + "]); return 1;"})
	if res.IsError {
		t.Fatalf("answer %q", resultText(res))
	}
	if n := len(log.params()); n != 1 {
		t.Errorf("asked %d times, want once", n)
	}
}

// TestCodeModeRoundsOperatorDeferral: a client that cannot be asked
// leaves a nested call to the operator's Approver. When that defers, the
// client gets the deferral as the call's error, not a question it could
// answer itself: nothing is sent.
func TestCodeModeRoundsOperatorDeferral(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log.txt"), []byte("log:"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, args := testenv.Filesystem(t, dir)
	g := newGateway(t, []conduit.Server{{ID: "fs", Command: cmd, Args: args}}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("fs/edit_file"), conduit.Allow("*")),
			Approver: conduit.DeferAll("the operator decides later")},
		StateKeys: [][]byte{stateKey},
		CodeMode:  gateway.CodeModeOptions{On: true},
	})
	// Alice's client declares no elicitation: she cannot be asked.
	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: serveGateway(t, g), HTTPClient: &http.Client{Transport: &sessionIDs{token: aliceToken}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := callRaw(ctx, cs, "run_code", map[string]any{"code": "return await " + editCall(dir) + ";"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.NeedsInput() || !res.IsError || !strings.Contains(schemaText(res.Content), "the operator decides later") {
		t.Fatalf("got %s (input requests %v), want the operator's deferral as an error", schemaText(res.Content), res.InputRequests)
	}
	if got := logFile(t, dir); got != "log:" {
		t.Fatalf("log.txt is %q: an edit reached the server", got)
	}
}
