package transport

// Each line a stdio server writes to stdout is judged before the SDK reads
// it. The SDK ends the session on a line that is not one JSON-RPC message.
// That may be a "Debugger listening on ..." banner, a stray print, or JSON
// nested deeper than its decoder takes. Every call in flight then fails,
// every principal's. Such a line is dropped and logged instead, as Claude
// Desktop's client does. The session goes on.

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxLineDepth is the deepest nesting of a message kept. The SDK's own
// decoder refuses deeper JSON, and its refusal ends the session.
const maxLineDepth = 1000

// lineFault says why a line of stdout is not passed on. It is lineOK for
// a line that is.
type lineFault int

const (
	lineOK lineFault = iota
	lineNotJSON
	lineNotMessage
	lineTooDeep
)

func (f lineFault) String() string {
	switch f {
	case lineNotJSON:
		return "not JSON"
	case lineNotMessage:
		return "not a JSON-RPC message"
	case lineTooDeep:
		return "nested deeper than 1000 levels"
	}
	return "ok"
}

// judgeLine decides what of one line (without its line break) the SDK may
// read. msgs are the messages to pass on, one a line. fault says why the
// line is dropped. A blank line gives neither. A JSON-RPC batch is passed
// on as its messages, one a line. The SDK's reader ends the session on a
// batch under protocol 2025-06-18 and later. The messages mean the same
// one by one. The nesting is measured before anything decodes the line.
func judgeLine(line []byte) (msgs [][]byte, fault lineFault) {
	line = bytes.Trim(line, " \t\r")
	if len(line) == 0 {
		return nil, lineOK
	}
	if depthOver(line, maxLineDepth) {
		return nil, lineTooDeep
	}
	if !json.Valid(line) {
		return nil, lineNotJSON
	}
	switch line[0] {
	case '{':
		if _, err := jsonrpc.DecodeMessage(line); err != nil {
			return nil, lineNotMessage
		}
		return [][]byte{line}, lineOK
	case '[':
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return nil, lineNotMessage
		}
		for _, raw := range batch {
			if raw[0] != '{' {
				return nil, lineNotMessage
			}
			if _, err := jsonrpc.DecodeMessage(raw); err != nil {
				return nil, lineNotMessage
			}
			msgs = append(msgs, raw)
		}
		return msgs, lineOK
	}
	return nil, lineNotMessage
}

// depthOver reports whether the objects and arrays of JSON text data nest
// deeper than max. It skips strings. data need not be valid.
func depthOver(data []byte, max int) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			// Skip to the closing quote, past escapes.
			for i++; i < len(data); i++ {
				if data[i] == '\\' {
					i++
				} else if data[i] == '"' {
					break
				}
			}
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// responseID returns the id of the response s scanned, when it is one with
// a valid id.
func responseID(s *idScan) (jsonrpc.ID, bool) {
	if !s.response || s.method || s.idBad || len(s.id) == 0 {
		return jsonrpc.ID{}, false
	}
	var v any
	if err := json.Unmarshal(s.id, &v); err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false
	}
	return id, true
}

// unreadable returns the error response for a dropped line's request. So
// its call is answered now rather than at its timeout. It returns nil when
// the line is not a response with a valid id. Only a line nested too deep
// is answered. It is JSON the server made, which the SDK's limit refuses.
// Its id is read from the top level of the object. A line that is not
// JSON or not a message may be anything (a debug print of a message). It
// is only dropped.
func unreadable(line []byte, fault lineFault) ([]byte, jsonrpc.ID) {
	if fault != lineTooDeep {
		return nil, jsonrpc.ID{}
	}
	var s idScan
	s.feed(line)
	id, ok := responseID(&s)
	if !ok {
		return nil, id
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeInternalError,
		Message: "its response could not be read (" + fault.String() + ") and was discarded",
	}})
	if err != nil {
		return nil, id
	}
	return data, id
}

// lineDrops logs the lines a server's transport drops. It logs at most one
// WARN a second. Each says how many were dropped unlogged since the last.
// So a server printing junk in a loop cannot flood the log.
type lineDrops struct {
	server string
	logger *slog.Logger

	mu     sync.Mutex
	last   time.Time
	quiet  int // dropped since the last WARN, unlogged
	now    func() time.Time
	period time.Duration
}

func newLineDrops(server string, logger *slog.Logger) *lineDrops {
	return &lineDrops{server: server, logger: logger, now: time.Now, period: time.Second}
}

// linePrefixBytes bounds the start of a dropped line that is logged. It
// shows what the line is made of, never the rest. The rest may hold a
// tool's output.
const linePrefixBytes = 60

// note logs a dropped line, unless one was logged within the period.
func (d *lineDrops) note(line []byte, fault lineFault, answered *jsonrpc.ID) {
	if d == nil || d.logger == nil {
		return
	}
	d.mu.Lock()
	now := d.now()
	if !d.last.IsZero() && now.Sub(d.last) < d.period {
		d.quiet++
		d.mu.Unlock()
		return
	}
	quiet := d.quiet
	d.last, d.quiet = now, 0
	d.mu.Unlock()
	attrs := []any{"server", d.server, "reason", fault.String(), "bytes", len(line), "start", linePrefix(line)}
	if quiet > 0 {
		attrs = append(attrs, "unlogged", quiet)
	}
	msg := "conduit: a line of the server's stdout was dropped"
	if answered != nil {
		msg = "conduit: a response on the server's stdout could not be read; its request is answered with an error"
		attrs = append(attrs, "id", answered.Raw())
	}
	d.logger.Warn(msg, attrs...)
}

// linePrefix is the start of line as a log may show it. It is cut at a
// character boundary. Hidden characters (terminal escapes, invisible ones)
// are escaped.
func linePrefix(line []byte) string {
	cut := len(line) > linePrefixBytes
	if cut {
		n := linePrefixBytes
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line = line[:n]
	}
	s := textsafe.EscapeLine(string(bytes.ToValidUTF8(line, []byte("\uFFFD"))))
	if cut {
		s += "..."
	}
	return s
}
