// Package transport carries a server's messages below the SDK. It runs a
// child process over stdio. It bounds each message a server sends.
package transport

// Every message a server sends is bounded as it streams, below the SDK.
// So no message of any size ends a session. One over the bound is
// discarded as it arrives, never held whole. The request it answers gets
// the error that stands in for a result over Limits.MaxResultBytes.
// Every other call to the server goes on.
//
// Over stdio a message is a line. The SDK ends the session on a line over
// 16 MiB. Over Streamable HTTP a message is a JSON response body or a
// server-sent event. The SDK reads a JSON body whole, without bound. It
// ends the session on an event over 16 MiB. In memory, messages are Go
// values already, and the wrapped connection (Conn) bounds results as
// they are read.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeResultTooLarge is the JSON-RPC error code of the error that stands
// in for a result over the limit.
const CodeResultTooLarge = -32099

// Oversize is what a hub does with a message over the bound. It gives the
// error response that stands in for it, and a log line.
type Oversize struct {
	Server string
	Limit  int // Limits.MaxResultBytes, which the model is told of
	// Marker is the error's Data, by which the hub knows its own error.
	Marker json.RawMessage
	Logger *slog.Logger
}

// reject returns the JSON text of the error response for the request of
// id (raw JSON). It returns nil when the message was not a response with
// a valid id. It logs the discarding.
func (o *Oversize) reject(s *idScan, size int) []byte {
	id, ok := responseID(s)
	if !ok {
		o.Logger.Warn("conduit: a message over the limit was discarded", "server", o.Server, "bytes", size, "limit", o.Limit)
		return nil
	}
	o.Logger.Warn("conduit: a response over the limit was discarded; its request is answered with the limit error", "server", o.Server, "bytes", size, "limit", o.Limit, "id", id.Raw())
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    CodeResultTooLarge,
		Message: "is larger than the limit of " + ByteSize(o.Limit),
		Data:    o.Marker,
	}})
	if err != nil {
		return nil
	}
	return data
}

// idScan finds what an error response needs in a JSON-RPC message given
// in pieces. It finds whether the message is a response: it has "result"
// or "error" and no "method". It finds its "id", wherever it comes. The
// TypeScript SDK writes the result first. It holds nothing but the id, at
// most maxIDBytes of it.
type idScan struct {
	depth      int
	inStr, esc bool
	object     bool // the message is an object
	expectKey  bool // at depth 1, before a key
	inKey      bool
	key        []byte // the key being read, at most 8 bytes
	keyLong    bool
	capturing  bool // reading the id's value
	id         []byte
	idBad      bool
	method     bool
	response   bool
}

const maxIDBytes = 256

func (s *idScan) feed(p []byte) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if s.inStr {
			if !s.capturing && !s.inKey && !s.esc {
				// Skip the bulk of a long string.
				j := bytes.IndexAny(p[i:], `"\`)
				if j < 0 {
					return
				}
				i += j
				c = p[i]
			}
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
			}
			if s.inKey {
				if s.inStr {
					s.keyByte(c)
				} else {
					s.inKey = false
				}
			} else if s.capturing {
				s.idByte(c)
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			s.inStr = true
			if s.depth == 1 && s.object && s.expectKey {
				s.inKey, s.key, s.keyLong, s.expectKey = true, s.key[:0], false, false
				continue
			}
		case ':':
			if s.depth == 1 && s.object && !s.capturing {
				switch k := string(s.key); {
				case s.keyLong:
				case k == "id":
					s.capturing, s.id = true, s.id[:0]
				case k == "method":
					s.method = true
				case k == "result" || k == "error":
					s.response = true
				}
				continue
			}
		case ',':
			if s.depth == 1 {
				s.capturing, s.expectKey = false, s.object
				continue
			}
		case '{', '[':
			if s.depth == 0 {
				s.object, s.expectKey = c == '{', c == '{'
			}
			s.depth++
			if s.depth == 1 {
				continue
			}
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				s.capturing = false
				continue
			}
		}
		if s.capturing {
			s.idByte(c)
		}
	}
}

func (s *idScan) keyByte(c byte) {
	if len(s.key) == 8 {
		s.keyLong = true
		return
	}
	s.key = append(s.key, c)
}

func (s *idScan) idByte(c byte) {
	if len(s.id) == maxIDBytes {
		s.idBad = true
		return
	}
	s.id = append(s.id, c)
}

// held is bytes kept as the pieces they were read in, never copied into
// one. So a message near the limit costs its size. It does not cost the
// doubling of a growing slice.
type held struct {
	parts [][]byte
	n     int
}

func (h *held) add(p []byte) {
	if len(p) > 0 {
		h.parts = append(h.parts, p)
		h.n += len(p)
	}
}

// read moves bytes to p.
func (h *held) read(p []byte) int {
	n := 0
	for n < len(p) && len(h.parts) > 0 {
		c := copy(p[n:], h.parts[0])
		n += c
		if h.parts[0] = h.parts[0][c:]; len(h.parts[0]) == 0 {
			h.parts[0] = nil
			h.parts = h.parts[1:]
		}
	}
	h.n -= n
	return n
}

func (h *held) each(f func([]byte)) {
	for _, p := range h.parts {
		f(p)
	}
}

// reader reads chunks of src for a bound. A chunk held in part past the
// next read is not reused. Its chunks start small and double, up to
// chunkSize, while reads fill them. Most responses are small. A 64 KiB
// chunk for each was 17% of an HTTP call's bytes.
type reader struct {
	src   io.Reader
	chunk []byte
	size  int    // of the next chunk made
	grow  bool   // the last read filled the chunk: make a larger one
	rest  []byte // read, not yet framed
	err   error
}

const (
	firstChunk = 4 << 10
	chunkSize  = 64 << 10
)

// fill reads the next chunk when rest is empty; it reports false at the
// end of src.
func (r *reader) fill() bool {
	for len(r.rest) == 0 {
		if r.err != nil {
			return false
		}
		if r.chunk == nil || r.grow {
			r.size = min(max(r.size, firstChunk), chunkSize)
			r.chunk, r.grow = make([]byte, r.size), false
		}
		n, err := r.src.Read(r.chunk)
		r.rest, r.err = r.chunk[:n], err
		if n == len(r.chunk) && r.size < chunkSize {
			r.size *= 2
			r.grow = true
		}
	}
	return true
}

// keep is called when part of the current chunk is held past the next
// read.
func (r *reader) keep() { r.chunk = nil }

// lineBound reads newline-delimited messages from src. It passes on those
// of at most limit bytes (0: any size) that the SDK can read (judgeLine).
// Each longer one is discarded as it streams. The line reject returns for
// it stands in for it (nothing if nil). A line that is not a message is
// dropped, and noted in drops. When it was a response with an id, the
// error response for that id stands in for it. It holds at most one line
// of limit bytes.
type lineBound struct {
	reader
	limit  int
	reject func(*idScan, int) []byte
	drops  *lineDrops // nil: drops are not logged

	line held // the start of a line within the limit
	out  held // ready for Read
	over bool // discarding a line
	size int  // its bytes so far
	scan idScan
}

func (b *lineBound) Read(p []byte) (int, error) {
	for b.out.n == 0 {
		if !b.fill() {
			if b.line.n > 0 {
				// An unterminated last line.
				b.pass(b.whole(nil))
				if b.out.n > 0 {
					break
				}
			}
			return 0, b.err
		}
		b.frame()
	}
	return b.out.read(p), nil
}

var newline = []byte{'\n'}

// whole returns the line held followed by tail, in one slice. Then it
// holds nothing more. It returns tail itself when nothing was held.
func (b *lineBound) whole(tail []byte) []byte {
	if b.line.n == 0 {
		return tail
	}
	line := make([]byte, 0, b.line.n+len(tail))
	b.line.each(func(p []byte) { line = append(line, p...) })
	b.line = held{}
	return append(line, tail...)
}

// pass moves what the SDK may read of a whole line to out. That is its
// messages, or for a dropped response the error response for its id.
func (b *lineBound) pass(line []byte) {
	msgs, fault := judgeLine(line)
	for _, m := range msgs {
		b.out.add(m)
		b.out.add(newline)
	}
	if fault == lineOK {
		return
	}
	answer, id := unreadable(line, fault)
	if answer == nil {
		b.drops.note(line, fault, nil)
		return
	}
	b.out.add(answer)
	b.out.add(newline)
	b.drops.note(line, fault, &id)
}

// frame moves what it can of rest to out.
func (b *lineBound) frame() {
	i := bytes.IndexByte(b.rest, '\n')
	seg := b.rest
	if i >= 0 {
		seg = b.rest[:i]
	}
	if b.over {
		b.scan.feed(seg)
		b.size += len(seg)
		if i < 0 {
			b.rest = nil
			return
		}
		b.rest = b.rest[i+1:]
		if r := b.reject(&b.scan, b.size); r != nil {
			b.out.add(append(r, '\n'))
		}
		b.over, b.size, b.scan = false, 0, idScan{}
		return
	}
	if b.limit > 0 && b.line.n+len(seg) > b.limit {
		b.over, b.size = true, b.line.n
		b.line.each(b.scan.feed)
		b.line = held{}
		return // seg is read in discarding
	}
	if i < 0 {
		b.line.add(seg)
		b.keep()
		b.rest = nil
		return
	}
	// out is read before the next fill: a line within the chunk may
	// stay in it.
	line := b.whole(seg)
	b.rest = b.rest[i+1:]
	b.pass(line)
}

// stdioTransport runs a server as a child process, as mcp.CommandTransport
// does. It speaks to it over stdin and stdout. A lineBound reads the
// child's stdout below the SDK's reader. The SDK's transport leaves no way
// to reach that reader. The lineBound bounds each line and drops those
// that are not messages.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	limit     int // 0: no bound, and none in the SDK either
	over      *Oversize
	drops     *lineDrops
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	lb := &lineBound{reader: reader{src: stdout}, drops: t.drops}
	maxLine := -1
	if t.limit > 0 {
		lb.limit, lb.reject = t.limit, t.over.reject
		// The SDK's own bound stays, above conduit's, which the
		// replacement lines are far under.
		maxLine = t.limit + 64<<10
	}
	tr := &mcp.IOTransport{Reader: io.NopCloser(lb), Writer: &childStdin{cmd: t.cmd, stdin: stdin, terminate: t.terminate}, MaxLineLength: maxLine}
	return tr.Connect(ctx)
}

// childStdin closes a session as mcp.CommandTransport does. The MCP
// specification asks for these steps:
//
//   - stdin closed;
//   - then SIGTERM if the child has not exited within terminate;
//   - then SIGKILL.
type childStdin struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
}

func (c *childStdin) Write(p []byte) (int, error) { return c.stdin.Write(p) }

func (c *childStdin) Close() error {
	if err := c.stdin.Close(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(c.terminate)
		defer t.Stop()
		select {
		case err := <-done:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("conduit: the server's process did not exit")
}

// boundTransport bounds the responses of an HTTP client as they stream.
// A JSON body over the limit is replaced by the error response for the
// request's id. A server-sent event over it is replaced by an event
// carrying that error for its own id.
type boundTransport struct {
	base  http.RoundTripper
	limit int
	over  *Oversize
}

func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		if resp.ContentLength >= 0 && resp.ContentLength <= int64(t.limit) {
			return resp, nil // within the bound: read as it streams
		}
		resp.Body = &jsonBound{body: resp.Body, length: resp.ContentLength, req: req, limit: t.limit, over: t.over}
		resp.ContentLength = -1
	case "text/event-stream":
		resp.Body = newSSEBound(resp.Body, t.limit, t.over)
	}
	return resp, nil
}

// jsonBound is a JSON body of unknown or excessive length. It reads it up
// to the limit, and passes it on when it ends there. Otherwise it closes
// it and passes on the error response for the request's id.
type jsonBound struct {
	body   io.ReadCloser
	length int64 // Content-Length, or -1
	req    *http.Request
	limit  int
	over   *Oversize
	read   bool
	out    held
}

func (j *jsonBound) Read(p []byte) (int, error) {
	if !j.read {
		j.read = true
		if j.length > int64(j.limit) {
			j.body.Close() // never read
			j.out.add(j.over.reject(requestID(j.req), int(j.length)))
		} else if err := j.hold(); err != nil {
			return 0, err
		}
	}
	if j.out.n == 0 {
		return 0, io.EOF
	}
	return j.out.read(p), nil
}

// hold reads the body up to the limit into out. When the body is longer,
// out is the error response.
func (j *jsonBound) hold() error {
	r := reader{src: j.body}
	size := 0
	for r.fill() {
		size += len(r.rest)
		if size > j.limit {
			j.body.Close() // the rest is never read
			j.out = held{}
			j.out.add(j.over.reject(requestID(j.req), size))
			return nil
		}
		j.out.add(r.rest)
		r.keep()
		r.rest = nil
	}
	if r.err != io.EOF {
		return r.err
	}
	return nil
}

func (j *jsonBound) Close() error { return j.body.Close() }

// requestID is an idScan of the JSON-RPC request an HTTP request carries.
// It reads the body again. The response that stands in for its answer
// needs it.
func requestID(req *http.Request) *idScan {
	s := &idScan{response: true}
	if req.GetBody == nil {
		return s
	}
	body, err := req.GetBody()
	if err != nil {
		return s
	}
	defer body.Close()
	data, _ := io.ReadAll(io.LimitReader(body, 64<<20))
	var r struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &r) == nil && len(r.ID) <= maxIDBytes {
		s.id = r.ID
	}
	return s
}

// sseBound bounds each event of a text/event-stream body. An event over
// the limit is discarded as it streams. An event stands in for it whose
// data is the error response for the id in its data. It keeps its own
// event id, so a stream resumed after it starts after it.
type sseBound struct {
	reader
	body  io.Closer
	limit int
	over  *Oversize

	event     held // the event being read, within the limit
	lineEnded bool // the event held ends with a line break
	out       held

	// Discarding an event: its size, its data scanned, its id line kept.
	discarding bool
	size       int
	scan       idScan
	lineStart  bool   // at the start of a line
	field      []byte // the field name of the line, up to 5 bytes
	inField    bool   // reading the field name
	lineKind   byte   // 'd' data, 'i' id, 0 other
	afterColon bool   // just past the colon after a field name
	eventID    []byte
}

func newSSEBound(body io.ReadCloser, limit int, over *Oversize) *sseBound {
	return &sseBound{reader: reader{src: body}, body: body, limit: limit, over: over}
}

func (s *sseBound) Read(p []byte) (int, error) {
	for s.out.n == 0 {
		if !s.fill() {
			if s.event.n > 0 {
				s.out, s.event = s.event, held{}
				break
			}
			return 0, s.err
		}
		s.frame()
	}
	return s.out.read(p), nil
}

func (s *sseBound) Close() error { return s.body.Close() }

// eventEnd returns the offset just past the blank line that ends the
// event in p, or -1. lineEnded says whether the bytes before p ended a
// line. It also reports whether p ends a line.
func eventEnd(p []byte, lineEnded bool) (int, bool) {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\n':
			if lineEnded {
				return i + 1, true
			}
			lineEnded = true
		case '\r':
		default:
			lineEnded = false
		}
	}
	return -1, lineEnded
}

func (s *sseBound) frame() {
	if s.discarding {
		s.discard()
		return
	}
	i, ended := eventEnd(s.rest, s.event.n == 0 || s.lineEnded)
	seg := s.rest
	if i >= 0 {
		seg = s.rest[:i]
	}
	if s.event.n+len(seg) > s.limit {
		s.discarding, s.size, s.lineStart = true, 0, true
		s.event.each(func(p []byte) { s.scanSSE(p) })
		s.event = held{}
		return
	}
	if i < 0 {
		s.event.add(seg)
		s.lineEnded = ended
		s.keep()
		s.rest = nil
		return
	}
	s.out, s.event = s.event, held{}
	s.out.add(seg)
	s.rest = s.rest[i:]
}

// discard reads rest as part of an event over the limit, up to its end.
func (s *sseBound) discard() {
	n := s.scanSSE(s.rest)
	s.rest = s.rest[n:]
	if !s.discarding {
		// The event ended: send its stand-in, with its id.
		var b bytes.Buffer
		if len(s.eventID) > 0 {
			b.WriteString("id: ")
			b.Write(s.eventID)
			b.WriteByte('\n')
		}
		if r := s.over.reject(&s.scan, s.size); r != nil {
			b.WriteString("event: message\ndata: ")
			b.Write(r)
			b.WriteByte('\n')
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
			s.out.add(b.Bytes())
		}
		s.scan, s.eventID = idScan{}, nil
	}
}

// scanSSE reads p as lines of an event being discarded. Data lines' values
// go to the scan. An id line's value is kept. It returns how much of p it
// read. That is all of it, or up to the end of the event, when it stops
// discarding.
func (s *sseBound) scanSSE(p []byte) int {
	for i := 0; i < len(p); {
		c := p[i]
		if s.lineStart {
			s.lineStart = false
			if c == '\n' || c == '\r' {
				if c == '\n' {
					s.discarding = false
					s.size += i + 1
					return i + 1
				}
				i++
				s.lineStart = true
				continue
			}
			s.inField, s.field, s.lineKind = true, s.field[:0], 0
		}
		if s.inField {
			switch {
			case c == ':':
				s.inField = false
				switch string(s.field) {
				case "data":
					s.lineKind = 'd'
				case "id":
					s.lineKind, s.eventID = 'i', s.eventID[:0]
				}
				i++
				s.afterColon = true
				continue
			case c == '\n':
				s.lineStart = true
			case len(s.field) < 5:
				s.field = append(s.field, c)
			}
			i++
			continue
		}
		if s.afterColon {
			// One space after the colon is not part of the value.
			s.afterColon = false
			if c == ' ' {
				i++
				continue
			}
		}
		j := bytes.IndexByte(p[i:], '\n')
		end := len(p)
		if j >= 0 {
			end = i + j
		}
		switch s.lineKind {
		case 'd':
			s.scan.feed(p[i:end])
		case 'i':
			if len(s.eventID)+end-i <= maxIDBytes {
				s.eventID = append(s.eventID, bytes.TrimRight(p[i:end], "\r")...)
			}
		}
		if j < 0 {
			s.size += len(p)
			return len(p)
		}
		i = end + 1
		s.lineStart = true
	}
	s.size += len(p)
	return len(p)
}

// Bounds are what a server's transport applies to the messages it reads.
// They hold the bound on their size (limit 0 for none). Over stdio, they
// hold the log of the lines dropped.
type Bounds struct {
	limit int
	over  *Oversize
	drops *lineDrops
}

// NewBounds returns the bounds of server's transports. Messages over limit
// bytes (0 for none) are dropped. Each response among them is answered by
// over's error. Lines dropped are logged to logger.
func NewBounds(server string, limit int, over *Oversize, logger *slog.Logger) *Bounds {
	b := &Bounds{drops: newLineDrops(server, logger)}
	if limit > 0 {
		b.limit, b.over = limit, over
	}
	return b
}

// HTTP returns hc with its responses bounded.
func (b *Bounds) HTTP(hc *http.Client) *http.Client {
	if b == nil || b.limit == 0 {
		return hc
	}
	cp := *hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp.Transport = &boundTransport{base: base, limit: b.limit, over: b.over}
	return &cp
}

// Stdio returns the transport of a child process, which terminate
// bounds the shutdown of (see childStdin).
func (b *Bounds) Stdio(cmd *exec.Cmd, terminate time.Duration) mcp.Transport {
	t := &stdioTransport{cmd: cmd, terminate: terminate}
	if b != nil {
		t.limit, t.over, t.drops = b.limit, b.over, b.drops
	}
	return t
}

// ByteSize writes n bytes for a person: "16 MiB", "64 KiB", "100 bytes".
func ByteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
