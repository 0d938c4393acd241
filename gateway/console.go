// The console's shared state: held approvals, pattern decisions, the audit trail.

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/once"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of [ConsoleOptions].
const (
	// DefaultAuditKeep is how long the audit trail keeps a record when
	// ConsoleOptions.AuditKeep is zero.
	DefaultAuditKeep = 90 * 24 * time.Hour
	// MaxPatternDecision bounds how long a pattern decision may last.
	MaxPatternDecision = 24 * time.Hour
)

// ConsoleOptions configure the operator console and the audit trail it
// shows. [Gateway.ListenAndServe] serves the console at ConsolePath. The
// gateway's store must keep journals ([store.Journals]). Every store of
// package store and its subpackages does.
type ConsoleOptions struct {
	// Admins are the principals the console serves. Every other caller
	// is refused (403), and an anonymous one is sent to the sign-in page.
	// None: the console serves no one.
	Admins []string
	// Approvals sends every call the policy asks about to the console.
	// The client's call waits until an admin decides. Or it waits until
	// Options.ApprovalTimeout passes, and is then denied, saying so. The
	// client is not asked. False: the client is asked, as without a
	// console.
	Approvals bool
	// AuditKeep is how long the audit trail keeps a record (default
	// DefaultAuditKeep).
	AuditKeep time.Duration
	// Principals are shown on the console's "Now" page with their usage
	// and taint. Those the audit trail names are shown too.
	Principals []string
	// Pinned are the servers whose tools the lock file pins, shown on
	// the "Now" page.
	Pinned []string
	// Secrets are values the console never shows, such as the servers'
	// tokens and header values. They are taken out of arguments and
	// reasons. So are the bearer tokens of HTTPOptions.Tokens.
	Secrets []string
	// OnAudit, when set, is given every record as the trail keeps it,
	// such as to export it as an OpenTelemetry log record. It is called
	// on the caller's goroutine, so it must not block.
	OnAudit func(context.Context, AuditRecord)
}

// Journal keys in the store.
const (
	// AuditJournal holds the audit trail, one [AuditRecord] per record.
	AuditJournal     = "conduit/audit"
	approvalsJournal = "conduit/console/approvals"
	patternsJournal  = "conduit/console/patterns"
)

// AuditRecord is one record of the audit trail. It is a decision on a
// call, or an action of the console's. It is JSON in the store and in
// exports.
type AuditRecord struct {
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"` // "call", "console" or "drift"
	Principal string    `json:"principal,omitempty"`
	Server    string    `json:"server,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	// ArgsDigest is the digest of the call's name and arguments, as
	// conduit's other records of calls name them. The arguments are not
	// kept.
	ArgsDigest string `json:"argsDigest,omitempty"`
	// Decision is the policy's ("allow", "ask", "deny"). For a console
	// action, it is the action.
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
	// Approver is who decided an "ask". It is "console:NAME",
	// "pattern:ID", "client", "approver" (the caller's own) or "".
	Approver string `json:"approver,omitempty"`
	Approved *bool  `json:"approved,omitempty"`
	// Outcome is "ok", "tool error", or the kind of the error that
	// answered the call. Kinds are "denied", "timeout" and so on.
	Outcome    string `json:"outcome,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// console is the gateway's console state. It is shared with other
// replicas through the store's journals and claims.
type console struct {
	o        ConsoleOptions
	admins   map[string]bool
	journals store.Journals
	claims   store.Claims
	wait     time.Duration // the approval timeout
	keep     time.Duration // AuditKeep

	mu      sync.Mutex
	changed chan struct{}   // closed and replaced on every local change
	drifts  map[string]bool // the drifts recorded by this process
	// waiting are the held calls of this replica, by approval id. One
	// watcher reads the journal for all of them while any waits.
	waiting  map[string]*waiter
	watching bool
	poll     time.Duration // how often the watcher reads the journal
}

// waiter is a held call waiting for its decision.
type waiter struct {
	asked    time.Time
	decision chan approvalRecord // buffered: the watcher never blocks
}

func newConsole(o ConsoleOptions, st store.Store, wait time.Duration) (*console, error) {
	j, ok := st.(store.Journals)
	if !ok {
		return nil, fmt.Errorf("gateway: the console needs a store that keeps journals, and %T keeps none", st)
	}
	c := &console{o: o, admins: map[string]bool{}, journals: j, claims: st, wait: wait, keep: o.AuditKeep, changed: make(chan struct{}),
		waiting: map[string]*waiter{}, poll: 250 * time.Millisecond}
	if c.keep <= 0 {
		c.keep = DefaultAuditKeep
	}
	for _, a := range o.Admins {
		c.admins[a] = true
	}
	return c, nil
}

// notify wakes this replica's event streams.
func (c *console) notify() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *console) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// approvalRecord is a record of the approvals journal. It is an ask, or
// its decision.
type approvalRecord struct {
	Kind      string    `json:"kind"` // "ask" or "decided"
	ID        string    `json:"id"`
	Principal string    `json:"principal,omitempty"`
	Server    string    `json:"server,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	Method    string    `json:"method,omitempty"`
	Args      string    `json:"args,omitempty"`
	Rule      string    `json:"rule,omitempty"`
	Asked     time.Time `json:"asked,omitzero"`
	Until     time.Time `json:"until,omitzero"`
	Decision  string    `json:"decision,omitempty"` // "approve", "deny", "timeout", "canceled"
	Reason    string    `json:"reason,omitempty"`
	By        string    `json:"by,omitempty"`
}

// patternRecord is a record of the patterns journal. It is a pattern
// decision, or its revocation. A pattern decision is such as "allow
// alice's github/create_issue for an hour".
type patternRecord struct {
	Kind      string    `json:"kind"` // "allow" or "revoke"
	ID        string    `json:"id"`
	Principal string    `json:"principal,omitempty"`
	Server    string    `json:"server,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	Until     time.Time `json:"until,omitzero"`
	By        string    `json:"by,omitempty"`
	At        time.Time `json:"at,omitzero"`
}

// pending is an approval that waits, as the console lists it.
type pending struct {
	approvalRecord
	Age time.Duration
}

// decideKey is the claim that makes an approval's decision once.
func decideKey(id string) string { return "conduit/console/decide/" + id }

// newID is a random identifier for approvals and patterns.
func newID() string { return rand.Text()[:16] }

func (c *console) appendJSON(ctx context.Context, key string, v any, keep time.Duration) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.journals.Append(context.WithoutCancel(ctx), key, data, keep)
	return err
}

// approvalsKeep keeps asks and decisions past their wait. So a late
// reader still finds a decision.
func (c *console) approvalsKeep() time.Duration { return 2*c.wait + time.Minute }

// readApprovals returns the asks still waiting, oldest first, and the
// decisions of the approvals journal by id.
func (c *console) readApprovals(ctx context.Context) ([]pending, map[string]approvalRecord, error) {
	now := time.Now()
	entries, err := c.journals.Read(ctx, approvalsJournal, now.Add(-c.approvalsKeep()), 0)
	if err != nil {
		return nil, nil, err
	}
	var asks []approvalRecord
	decided := map[string]approvalRecord{}
	for _, e := range entries {
		var r approvalRecord
		if json.Unmarshal(e.Record, &r) != nil {
			continue
		}
		switch r.Kind {
		case "ask":
			asks = append(asks, r)
		case "decided":
			decided[r.ID] = r
		}
	}
	var out []pending
	for _, a := range asks {
		if _, done := decided[a.ID]; done || now.After(a.Until) {
			continue
		}
		out = append(out, pending{approvalRecord: a, Age: now.Sub(a.Asked).Truncate(time.Second)})
	}
	return out, decided, nil
}

// patterns returns the pattern decisions in force, newest first.
func (c *console) patterns(ctx context.Context) ([]patternRecord, error) {
	now := time.Now()
	entries, err := c.journals.Read(ctx, patternsJournal, now.Add(-MaxPatternDecision-time.Minute), 0)
	if err != nil {
		return nil, err
	}
	revoked := map[string]bool{}
	var allows []patternRecord
	for _, e := range entries {
		var r patternRecord
		if json.Unmarshal(e.Record, &r) != nil {
			continue
		}
		switch r.Kind {
		case "allow":
			allows = append(allows, r)
		case "revoke":
			revoked[r.ID] = true
		}
	}
	var out []patternRecord
	for _, r := range slices.Backward(allows) {
		if !revoked[r.ID] && now.Before(r.Until) {
			out = append(out, r)
		}
	}
	return out, nil
}

// hold is the approver of calls with ConsoleOptions.Approvals. A pattern
// in force decides. Else the call waits in the console for an admin.
func (c *console) hold(ctx context.Context, req conduit.ApprovalRequest) conduit.Approval {
	call := req.Call
	note := noteFrom(ctx)
	pats, err := c.patterns(ctx)
	if err != nil {
		return conduit.Reject("the console's decisions cannot be read: the shared store is unavailable")
	}
	for _, p := range pats {
		if p.Principal == call.Principal && p.Server == call.Server && p.Tool == call.Tool {
			note.setApprover("pattern:" + p.ID)
			return conduit.Approve()
		}
	}
	now := time.Now()
	ask := approvalRecord{Kind: "ask", ID: newID(), Principal: call.Principal, Server: call.Server, Tool: call.Tool,
		Method: call.Method, Args: consoleArgs(call.Args), Rule: req.Rule.String(), Asked: now, Until: now.Add(c.wait)}
	if err := c.appendJSON(ctx, approvalsJournal, ask, c.approvalsKeep()); err != nil {
		return conduit.Reject("it needs an admin's approval, and the console cannot be reached: the shared store is unavailable")
	}
	c.notify()
	w := c.await(ask)
	defer c.forget(ask.ID)
	deadline := time.NewTimer(c.wait)
	defer deadline.Stop()
	select {
	case d := <-w.decision:
		return c.answer(note, d)
	case <-deadline.C:
		return c.close(ctx, note, ask, "timeout", fmt.Sprintf("no admin decided within %v", c.wait))
	case <-ctx.Done():
		return c.close(ctx, note, ask, "canceled", "the call ended before an admin decided")
	}
}

// await registers ask's call as waiting, and starts the watcher if none
// runs. Each held call polling the journal on its own would multiply the
// reads by the calls held.
func (c *console) await(ask approvalRecord) *waiter {
	w := &waiter{asked: ask.Asked, decision: make(chan approvalRecord, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting[ask.ID] = w
	if !c.watching {
		c.watching = true
		go c.watch()
	}
	return w
}

// forget ends ask's wait.
func (c *console) forget(id string) {
	c.mu.Lock()
	delete(c.waiting, id)
	c.mu.Unlock()
}

// watch reads the approvals journal for this replica's held calls. It
// reads at once, then on every local change and every poll, since
// another replica's decision is seen only by reading. It ends when no
// call waits.
func (c *console) watch() {
	tick := time.NewTicker(c.poll)
	defer tick.Stop()
	for {
		c.mu.Lock()
		if len(c.waiting) == 0 {
			c.watching = false
			c.mu.Unlock()
			return
		}
		since := time.Now()
		for _, w := range c.waiting {
			if w.asked.Before(since) {
				since = w.asked
			}
		}
		changed := c.changed
		c.mu.Unlock()

		c.deliver(since)
		select {
		case <-changed:
		case <-tick.C:
		}
	}
}

// deliver hands each waiting call its decision, if the journal has it.
// A store that cannot be read is tried again on the next poll; the
// calls' own deadlines bound the wait.
func (c *console) deliver(since time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	entries, err := c.journals.Read(ctx, approvalsJournal, since.Add(-time.Second), 0)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		var r approvalRecord
		if json.Unmarshal(e.Record, &r) != nil || r.Kind != "decided" {
			continue
		}
		if w, ok := c.waiting[r.ID]; ok {
			delete(c.waiting, r.ID)
			w.decision <- r
		}
	}
}

// maxConsoleArgs bounds the arguments an approval shows, in bytes.
const maxConsoleArgs = 16 << 10

// consoleArgs are a call's arguments as the console shows them. They are
// indented JSON, cut at maxConsoleArgs. Its characters are as sent, and
// the page escapes them.
func consoleArgs(args map[string]any) string {
	if args == nil {
		args = map[string]any{}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(args) != nil {
		return "(arguments that cannot be shown)"
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if len(out) <= maxConsoleArgs {
		return out
	}
	cut := maxConsoleArgs
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n... (%d bytes in all)", out[:cut], len(out))
}

// decision reads the decision of ask, when there is one.
func (c *console) decision(ctx context.Context, ask approvalRecord) (approvalRecord, bool) {
	entries, err := c.journals.Read(ctx, approvalsJournal, ask.Asked.Add(-time.Second), 0)
	if err != nil {
		return approvalRecord{}, false
	}
	for _, e := range slices.Backward(entries) {
		var r approvalRecord
		if json.Unmarshal(e.Record, &r) == nil && r.Kind == "decided" && r.ID == ask.ID {
			return r, true
		}
	}
	return approvalRecord{}, false
}

// close ends a wait that no admin ended. It claims the decision. So an
// admin's later click finds it decided. An admin who won the claim first
// decides.
func (c *console) close(ctx context.Context, note *auditNote, ask approvalRecord, how, reason string) conduit.Approval {
	ctx = context.WithoutCancel(ctx)
	d := approvalRecord{Kind: "decided", ID: ask.ID, Decision: how, Reason: reason}
	won, err := c.decide(ctx, d)
	if err == nil && !won {
		// An admin decided at the same moment: their decision holds,
		// once it is written.
		for range 20 {
			if r, ok := c.decision(ctx, ask); ok {
				return c.answer(note, r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return conduit.Reject(reason)
}

// answer turns a decision into the approver's answer.
func (c *console) answer(note *auditNote, d approvalRecord) conduit.Approval {
	if d.By != "" {
		note.setApprover("console:" + d.By)
	}
	switch d.Decision {
	case "approve":
		return conduit.Approve()
	case "deny":
		if d.Reason == "" {
			return conduit.Reject("an admin denied it")
		}
		return conduit.Reject("an admin denied it: " + d.Reason)
	}
	return conduit.Reject(d.Reason)
}

// errDecided is the answer to deciding an approval decided already.
var errDecided = errors.New("it was decided already")

// decide makes d the decision of its approval, once across replicas.
// won is false when another decision was made first.
func (c *console) decide(ctx context.Context, d approvalRecord) (won bool, err error) {
	t, _, err := once.Claim(ctx, c.claims, decideKey(d.ID), c.approvalsKeep())
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, nil
	}
	data, _ := json.Marshal(d)
	if err := c.appendJSON(ctx, approvalsJournal, d, c.approvalsKeep()); err != nil {
		t.Record(ctx, nil, err)
		return false, err
	}
	t.Record(ctx, data, nil)
	c.notify()
	return true, nil
}

// audit appends r to the audit trail. A failure is the caller's to log.
func (c *console) audit(ctx context.Context, r AuditRecord) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	err := c.appendJSON(ctx, AuditJournal, r, c.keep)
	c.notify()
	if c.o.OnAudit != nil {
		c.o.OnAudit(ctx, r)
	}
	return err
}

// ReadAudit returns the audit trail's records appended since, oldest
// first. It returns the newest limit of them (0: all). j is a store that
// keeps journals. Records that cannot be read are skipped.
func ReadAudit(ctx context.Context, j store.Journals, since time.Time, limit int) ([]AuditRecord, error) {
	entries, err := j.Read(ctx, AuditJournal, since, limit)
	if err != nil {
		return nil, err
	}
	out := make([]AuditRecord, 0, len(entries))
	for _, e := range entries {
		var r AuditRecord
		if json.Unmarshal(e.Record, &r) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// auditNote gathers what the audit record of one call needs. It gathers
// it from the trace's events and the approver.
type auditNote struct {
	mu       sync.Mutex
	decision string
	rule     string
	approver string
	approved *bool
}

type auditNoteKey struct{}

func noteFrom(ctx context.Context) *auditNote {
	n, _ := ctx.Value(auditNoteKey{}).(*auditNote)
	return n
}

func (n *auditNote) setApprover(a string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	n.approver = a
	n.mu.Unlock()
}

// auditTrace adds the audit trail's callbacks to t.
func (g *Gateway) auditTrace(t *conduit.Trace) {
	c := g.console
	u := *t
	t.CallStart = func(i conduit.CallStartInfo) context.Context {
		ctx := i.Context
		if u.CallStart != nil {
			if uctx := u.CallStart(i); uctx != nil {
				ctx = uctx
			}
		}
		return context.WithValue(ctx, auditNoteKey{}, &auditNote{})
	}
	t.Decided = func(i conduit.StepInfo) {
		if u.Decided != nil {
			u.Decided(i)
		}
		if n := noteFrom(i.Context); n != nil {
			n.mu.Lock()
			n.decision, n.rule = i.Decision.String(), i.Rule.String()
			if !i.Matched {
				n.rule = "(no rule matched)"
			}
			n.mu.Unlock()
		}
	}
	t.Approved = func(i conduit.StepInfo) {
		if u.Approved != nil {
			u.Approved(i)
		}
		if n := noteFrom(i.Context); n != nil {
			n.mu.Lock()
			ok := i.Approval.Allow
			n.approved = &ok
			if n.approver == "" {
				n.approver = "client"
			}
			n.mu.Unlock()
		}
	}
	t.CallDone = func(i conduit.CallDoneInfo) {
		if u.CallDone != nil {
			u.CallDone(i)
		}
		r := AuditRecord{Kind: "call", Principal: i.Call.Principal, Server: i.Call.Server, Tool: i.Call.Tool, DurationMs: i.Elapsed.Milliseconds()}
		if r.Tool == "" {
			r.Tool = i.Call.Exposed
		}
		args, _ := json.Marshal(i.Call.Args)
		r.ArgsDigest = digest.Call(i.Call.Exposed, args)
		if n := noteFrom(i.Context); n != nil {
			n.mu.Lock()
			r.Decision, r.Rule, r.Approver, r.Approved = n.decision, n.rule, n.approver, n.approved
			n.mu.Unlock()
		}
		r.Outcome = auditOutcome(i.Result, i.Err)
		if err := c.audit(i.Context, r); err != nil {
			g.logger.Warn("gateway: an audit record was not kept", "err", err)
		}
	}
	t.PinDrift = func(i conduit.PinDriftInfo) {
		if u.PinDrift != nil {
			u.PinDrift(i)
		}
		d := i.Drift
		key := d.Server + "\x00" + d.Tool + "\x00" + d.Kind.String() + "\x00" + d.Listed
		c.mu.Lock()
		seen := c.drifts[key]
		if c.drifts == nil {
			c.drifts = map[string]bool{}
		}
		c.drifts[key] = true
		c.mu.Unlock()
		if seen {
			return // each listing reports it again
		}
		r := AuditRecord{Kind: "drift", Server: d.Server, Tool: d.Tool, Detail: d.Message()}
		if err := c.audit(context.Background(), r); err != nil {
			g.logger.Warn("gateway: an audit record was not kept", "err", err)
		}
	}
}

// auditOutcome names how a call ended, for the audit trail.
func auditOutcome(res *mcp.CallToolResult, err error) string {
	if err != nil {
		var ce *conduit.Error
		if errors.As(err, &ce) {
			return ce.Kind.String()
		}
		return "error"
	}
	if res != nil && res.IsError {
		return "tool error"
	}
	return "ok"
}
