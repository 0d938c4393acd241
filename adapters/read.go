package adapters

import (
	"container/list"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The read tool: read_result. A Conversation with ReadOptions.On offers
// and answers it itself. Here too is the Keeper of the results its budget
// cut (see ReadOptions).

// The read tool's name, and its server id. The policy, approvers, hooks
// and Trace see it under that id. The pattern "conduit/read_result"
// matches it. So does "conduit/*", which matches conduit's search tool
// too.
const (
	ReadToolName   = "read_result"
	ReadToolServer = "conduit"
)

// DefaultReadMaxBytes is ReadOptions.MaxBytes's default: 32 MiB of kept
// text per Conversation. That is two results at the hub's default
// conduit.Limits.MaxResultBytes.
const DefaultReadMaxBytes = 32 << 20

// maxPattern bounds a read_result pattern, in bytes. With RE2 (Go's
// regexp), a search costs time linear in the text for a given pattern.
// Bounding the pattern bounds that factor too.
const maxPattern = 1000

// ReadOptions say whether a Conversation keeps the whole of the results
// its budget cut, and where. With them it offers its read tool,
// read_result. The zero value is off.
//
// read_result is a tool the Conversation answers itself, as it answers
// search_tools. Nothing is sent to any server. The source's governance
// runs it as conduit/read_result: a deny rule hides it and refuses its
// calls. The notice of a cut result names it and the result's reference.
// The model reads the rest one budget's worth at a time:
//
//   - by lines (line, lines);
//   - by bytes (offset);
//   - or the numbered lines that match an RE2 pattern.
//
// Each answer says where to go on from. RE2 matches in time linear in
// the text. A pattern is at most 1,000 bytes, and the call's time limit
// bounds a search.
//
// A Conversation carried into another process (saved and restored) does
// not carry its kept results. Otherwise a saved state would be megabytes,
// since one result may be 16 MiB. It would be written and authenticated
// at every turn, for text the model may never read. The application may
// give a Keeper shared by its processes. Without one, a read of an
// earlier result there is answered that the result is no longer kept.
// The answer tells the model to call the tool again with a narrower
// request.
//
// It is off by default, for three reasons:
//
//   - the tool's definition is sent with every request (about 300 tokens);
//   - the results are held for the Conversation's life;
//   - a Conversation restored in another process finds none of them
//     without a shared Keeper.
//
// Turn it on where conversations live in one process, as `conduit agent`
// does.
type ReadOptions struct {
	// On keeps the results cut and offers read_result from the first
	// turn, after the other tools. It is not offered when:
	//
	//   - the policy denies conduit/read_result outright for the
	//     conversation's principal and taint;
	//   - a server's tool is already exposed under that name.
	//
	// Then a warning in Listing.Warnings says why it is not offered. The
	// notices then say to ask for less.
	On bool
	// MaxBytes bounds the text kept in memory by the Conversation. The
	// least recently kept or read result is dropped first. A result
	// larger than MaxBytes is not kept. 0 means DefaultReadMaxBytes. It is
	// ignored with a Keeper.
	MaxBytes int
	// Keeper, when set, keeps the results in place of the Conversation's
	// memory. One shared by processes lets a Conversation restored in
	// another read what was cut in the first.
	Keeper Keeper
}

// Keeper keeps the whole text of cut results for a Conversation's read
// tool, by key. A key is the Conversation's id, a slash, and the
// reference the model reads (R-XXXXXXXX, random). So a Keeper shared by
// conversations serves each only what it kept itself. That holds
// whatever reference its model names. Its methods are safe for
// concurrent use.
type Keeper interface {
	// Keep keeps text under key. An error leaves the result not kept.
	// Errors include a bound of the keeper's passed, or the store down.
	// The result's notice then says to ask for less.
	Keep(ctx context.Context, key, text string) error
	// Load returns the text kept under key. ok is false when there is
	// none: never kept, or dropped since.
	Load(ctx context.Context, key string) (text string, ok bool, err error)
}

// ErrTooLarge is what the memory Keeper's Keep returns for a text it can
// never hold. The text is larger than its whole bound.
var ErrTooLarge = errors.New("adapters: the result is larger than the keeper's bound")

// NewMemoryKeeper returns a Keeper that holds at most maxBytes of text in
// memory (0: DefaultReadMaxBytes). It drops the least recently kept or
// read first. Conversations that share one share its bound.
func NewMemoryKeeper(maxBytes int) Keeper {
	if maxBytes <= 0 {
		maxBytes = DefaultReadMaxBytes
	}
	return &memoryKeeper{max: maxBytes, byRef: map[string]*list.Element{}, order: list.New()}
}

type memoryKeeper struct {
	mu    sync.Mutex
	max   int
	size  int
	byRef map[string]*list.Element // of *kept
	order *list.List               // the most recently used first
}

type kept struct{ ref, text string }

func (k *memoryKeeper) Keep(_ context.Context, ref, text string) error {
	if len(text) > k.max {
		return ErrTooLarge
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.byRef[ref]; ok {
		k.size -= len(e.Value.(*kept).text)
		k.order.Remove(e)
	}
	for k.size+len(text) > k.max {
		oldest := k.order.Back()
		gone := oldest.Value.(*kept)
		k.order.Remove(oldest)
		delete(k.byRef, gone.ref)
		k.size -= len(gone.text)
	}
	k.byRef[ref] = k.order.PushFront(&kept{ref, text})
	k.size += len(text)
	return nil
}

func (k *memoryKeeper) Load(_ context.Context, ref string) (string, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.byRef[ref]
	if !ok {
		return "", false, nil
	}
	k.order.MoveToFront(e)
	return e.Value.(*kept).text, true, nil
}

// reader is a Conversation's read tool and what it keeps.
type reader struct {
	tool   *conduit.LocalTool
	keeper Keeper
	scope  string      // the Conversation's id: the keeper's keys are scope/ref
	o      ExecOptions // the Conversation's, for the budget of the tool's answers and its Logger
}

// newReader makes the Conversation's read tool over keeper.
func newReader(keeper Keeper, scope string, o ExecOptions) *reader {
	rd := &reader{keeper: keeper, scope: scope, o: o}
	rd.tool = &conduit.LocalTool{Tool: newReadTool(), Answer: rd.answer}
	return rd
}

// keep keeps text and returns the tool's name and its reference. Both
// are empty when text is not kept.
func (rd *reader) keep(ctx context.Context, text string) (tool, ref string) {
	ref = "R-" + rand.Text()[:8]
	if err := rd.keeper.Keep(ctx, rd.scope+"/"+ref, text); err != nil {
		if rd.o.Logger != nil && !errors.Is(err, ErrTooLarge) {
			rd.o.Logger.WarnContext(ctx, "conduit: a cut result could not be kept for read_result", "err", err)
		}
		return "", ""
	}
	return ReadToolName, ref
}

// readArgs are a read_result call's arguments.
type readArgs struct {
	ref     string
	line    int // from 1
	lines   int // 0: as many as fit
	offset  int // -1: by lines
	pattern *regexp.Regexp
}

// answer answers a read_result call that the governance let through.
func (rd *reader) answer(ctx context.Context, call *conduit.Call) (*mcp.CallToolResult, error) {
	a, err := parseReadArgs(call.Args)
	if err != nil {
		return toolError(err.Error()), nil
	}
	text, ok, err := rd.keeper.Load(ctx, rd.scope+"/"+a.ref)
	if err != nil {
		if rd.o.Logger != nil {
			rd.o.Logger.WarnContext(ctx, "conduit: read_result could not load a kept result", "ref", a.ref, "err", err)
		}
		return toolError(fmt.Sprintf("The result %s could not be read now. Call the tool that produced it again, asking for less at a time (a narrower query, a smaller range or page).", a.ref)), nil
	}
	if !ok {
		return toolError(fmt.Sprintf("The result %s is not kept: it was dropped to bound memory, or this conversation was carried on elsewhere. Call the tool that produced it again, asking for less at a time (a narrower query, a smaller range or page).", a.ref)), nil
	}
	// One page is what the answer's own budget lets through. Each reader
	// leaves room for its header. So the answer is not cut again.
	page := rd.o.resultBudget(toolcall.Call{ID: call.ID, Name: call.Exposed, Server: call.Server, Tool: call.Tool, Args: call.Args, Def: call.Def})
	if turn := rd.o.turnBudget(); page == 0 || (turn > 0 && turn < page) {
		page = turn
	}
	if page == 0 {
		page = DefaultMaxResultTokens
	}
	var out string
	switch {
	case a.pattern != nil:
		out, err = grep(ctx, a, text, page)
	case a.offset >= 0:
		out, err = byBytes(a, text, page)
	default:
		out, err = byLines(a, text, page)
	}
	var re readError
	switch {
	case errors.As(err, &re):
		return toolError("read_result: " + re.Error()), nil
	case err != nil:
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// parseReadArgs reads and checks a read_result call's arguments.
func parseReadArgs(args map[string]any) (readArgs, error) {
	a := readArgs{line: 1, offset: -1}
	ref, ok := args["result"].(string)
	if !ok || strings.TrimSpace(ref) == "" {
		return a, errors.New(`"result" is required: the reference the notice of the cut result gives, such as "R-ABCD2345".`)
	}
	a.ref = strings.TrimSpace(ref)
	num := func(key string, least int) (int, bool, error) {
		v, has := args[key]
		if !has || v == nil {
			return 0, false, nil
		}
		n, ok := wholeNumber(v)
		if !ok || n < int64(least) || n > 1<<40 {
			return 0, false, fmt.Errorf("%q must be a whole number, at least %d.", key, least)
		}
		return int(n), true, nil
	}
	var err error
	var has bool
	if a.line, has, err = num("line", 1); err != nil {
		return a, err
	} else if !has {
		a.line = 1
	}
	if a.lines, _, err = num("lines", 1); err != nil {
		return a, err
	}
	if a.offset, has, err = num("offset", 0); err != nil {
		return a, err
	} else if !has {
		a.offset = -1
	}
	if v, has := args["pattern"]; has && v != nil {
		p, ok := v.(string)
		switch {
		case !ok || p == "":
			return a, errors.New(`"pattern" must be a regular expression (RE2 syntax), such as "(?i)error|warning".`)
		case len(p) > maxPattern:
			return a, fmt.Errorf(`"pattern" is longer than %d bytes; use a shorter one.`, maxPattern)
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return a, fmt.Errorf(`"pattern" is not a regular expression conduit can run (RE2 syntax, no backreferences or lookaround): %v.`, err)
		}
		a.pattern = re
	}
	if a.pattern != nil && a.offset >= 0 {
		return a, errors.New(`give "pattern" or "offset", not both: a pattern is matched line by line, from "line".`)
	}
	return a, nil
}

// lineStart returns the offset of line n (from 1) in text. It returns
// false past the text's end.
func lineStart(text string, n int) (int, bool) {
	at := 0
	for i := 1; i < n; i++ {
		j := strings.IndexByte(text[at:], '\n')
		if j < 0 {
			return 0, false
		}
		at += j + 1
	}
	return at, at < len(text) || n == 1
}

// byLines is lines from a.line, as many as a.lines asks and page tokens
// take. A header before them says where to go on from.
func byLines(a readArgs, text string, page int) (string, error) {
	total := tokens.Lines(text)
	start, ok := lineStart(text, a.line)
	if !ok {
		return "", readError(fmt.Sprintf("the result has %d lines; line %d is past its end.", total, a.line))
	}
	end := len(text)
	if a.lines > 0 {
		if e, ok := lineStart(text[start:], a.lines+1); ok && e > 0 {
			end = start + e
		}
	}
	worst := fmt.Sprintf("[%s: lines %d-%d of %d; line %d is cut at byte %d: go on with offset %d]\n", ReadToolName, total, total, total, total, len(text), len(text))
	body := tokens.CutText(text[start:end], bodyBudget(page, worst))
	stop := start + len(body)
	last := a.line + strings.Count(body, "\n") - 1
	partial := body != "" && !strings.HasSuffix(body, "\n")
	if partial {
		last++ // the last line shown has no break: cut within it, or the text's last
	}
	var h strings.Builder
	fmt.Fprintf(&h, "[%s: lines %d-%d of %d", ReadToolName, a.line, max(last, a.line), total)
	switch {
	case stop >= len(text):
		h.WriteString(", to the end]\n")
	case partial:
		fmt.Fprintf(&h, "; line %d is cut at byte %d: go on with offset %d]\n", last, stop, stop)
	default:
		fmt.Fprintf(&h, "; go on with line %d]\n", last+1)
	}
	return h.String() + body, nil
}

// byBytes is the text from byte a.offset, as much as page tokens take.
func byBytes(a readArgs, text string, page int) (string, error) {
	if a.offset >= len(text) {
		return "", readError(fmt.Sprintf("the result has %d bytes; offset %d is past its end.", len(text), a.offset))
	}
	start := a.offset
	for start < len(text) && !utf8.RuneStart(text[start]) {
		start++ // never inside a UTF-8 sequence
	}
	worst := fmt.Sprintf("[%s: bytes %d-%d of %d; go on with offset %d]\n", ReadToolName, len(text), len(text), len(text), len(text))
	body := tokens.CutText(text[start:], bodyBudget(page, worst))
	stop := start + len(body)
	var h strings.Builder
	fmt.Fprintf(&h, "[%s: bytes %d-%d of %d", ReadToolName, start, stop, len(text))
	if stop >= len(text) {
		h.WriteString(", to the end]\n")
	} else {
		fmt.Fprintf(&h, "; go on with offset %d]\n", stop)
	}
	return h.String() + body, nil
}

// bodyBudget is what a page of page tokens leaves for the text. The
// header before it is no longer than worst. It is at least a token, so
// that a read always moves on.
func bodyBudget(page int, worst string) int {
	return max(page-tokens.Text(worst)-2, 1)
}

// maxMatchLine bounds the text shown of one matching line, in bytes.
const maxMatchLine = 400

// grep is the lines from a.line that match a.pattern, numbered. It gives
// as many as page tokens take. RE2 matches in time linear in the text.
// The call's context is checked as grep goes.
func grep(ctx context.Context, a readArgs, text string, page int) (string, error) {
	start, ok := lineStart(text, a.line)
	if !ok {
		return "", readError(fmt.Sprintf("the result has %d lines; line %d is past its end.", tokens.Lines(text), a.line))
	}
	total := tokens.Lines(text)
	page = bodyBudget(page, fmt.Sprintf("[%s: %d lines match %q from line %d; more may follow: go on with line %d]\n", ReadToolName, total, a.pattern.String(), total, total))
	var body strings.Builder
	used, matches, n := 0, 0, a.line
	next := 0 // the line to go on from, when the page is full
	for at := start; at < len(text); n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		end := strings.IndexByte(text[at:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += at
		}
		line := text[at:end]
		at = end + 1
		loc := a.pattern.FindStringIndex(line)
		if loc == nil {
			continue
		}
		entry := fmt.Sprintf("%d: %s\n", n, excerpt(line, loc))
		if cost := tokens.Text(entry); used+cost > page {
			next = n
			break
		} else {
			used += cost
		}
		body.WriteString(entry)
		matches++
	}
	var h strings.Builder
	fmt.Fprintf(&h, "[%s: %d lines match %q from line %d", ReadToolName, matches, a.pattern.String(), a.line)
	if next > 0 {
		fmt.Fprintf(&h, "; more may follow: go on with line %d]\n", next)
	} else {
		h.WriteString(", to the end]\n")
	}
	if matches == 0 && next == 0 {
		return h.String() + "No line matches.", nil
	}
	return h.String() + body.String(), nil
}

// excerpt is a matching line. Past maxMatchLine bytes, it is the part of
// the line around the match, cut at characters.
func excerpt(line string, loc []int) string {
	if len(line) <= maxMatchLine {
		return line
	}
	from := max(loc[0]-maxMatchLine/4, 0)
	to := min(from+maxMatchLine, len(line))
	for from > 0 && !utf8.RuneStart(line[from]) {
		from--
	}
	for to < len(line) && !utf8.RuneStart(line[to]) {
		to++
	}
	out := line[from:to]
	if from > 0 {
		out = "…" + out
	}
	if to < len(line) {
		out += "…"
	}
	return out
}

// readError is a read the model asked for that cannot be made. It is an
// error result, which tells the model why.
type readError string

func (e readError) Error() string { return string(e) }

// newReadTool is conduit's read tool, for one Conversation.
func newReadTool() *conduit.Tool {
	return &conduit.Tool{
		Tool: &mcp.Tool{
			Name: ReadToolName,
			Description: "Read more of a tool result that was cut to fit the context: by lines, by bytes, or the lines that match " +
				"a regular expression. The notice at the end of a cut result gives its reference and says where it was cut; " +
				"each answer says where to go on from.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"result": map[string]any{"type": "string", "description": `The result's reference, from its notice ("R-...").`},
					"line":   map[string]any{"type": "integer", "minimum": 1, "description": "The first line to read, or to search from (default 1)."},
					"lines":  map[string]any{"type": "integer", "minimum": 1, "description": "How many lines to read (default: as many as fit)."},
					"offset": map[string]any{"type": "integer", "minimum": 0, "description": "Read from this byte instead of by line: for text of few, long lines."},
					"pattern": map[string]any{"type": "string", "maxLength": maxPattern,
						"description": `A regular expression (RE2 syntax, such as "(?i)timeout|refused"): return the numbered lines that match, instead of a range.`},
				},
				"required":             []any{"result"},
				"additionalProperties": false,
			},
		},
		Exposed: ReadToolName,
		Server:  ReadToolServer,
	}
}

// readTool makes the Conversation's read tool when o asks for it. It
// returns the tool, to be listed after the other tools. When the tool
// cannot be offered, a warning says why. There is none when it is off.
func (c *Conversation) readTool(ts *conduit.ToolSet, o *ConversationOptions) ([]*conduit.Tool, []toolcall.Warning) {
	if !o.Read.On {
		return nil, nil
	}
	keeper := o.Read.Keeper
	if keeper == nil {
		keeper = NewMemoryKeeper(o.Read.MaxBytes)
	}
	rd := newReader(keeper, c.id, c.o)
	why := ""
	if _, taken := ts.Lookup(ReadToolName); taken {
		why = "a tool of the servers is exposed as " + ReadToolName
	} else if ls, ok := c.src.(localSource); ok && !ls.OffersLocal(rd.tool.Tool, &conduit.ListOptions{Principal: o.Principal, Taint: o.Taint}) {
		why = "the policy denies " + ReadToolServer + "/" + ReadToolName + " (allow it to read cut results)"
	}
	if why != "" {
		return nil, []toolcall.Warning{{Tool: ReadToolName, Message: "not offered: " + why + "; the notice of a cut result says to ask for less instead"}}
	}
	c.o.locals = append(c.o.locals, rd.tool)
	c.o.reader = rd
	return []*conduit.Tool{rd.tool.Tool}, nil
}
