// Package sse reads server-sent events from a byte stream, one event at a
// time and bounded. The providers' streamed responses use it.
//
// It follows the WHATWG event-stream rules:
//
//   - fields event and data;
//   - comment lines;
//   - LF, CRLF or CR line ends;
//   - a blank line ends an event.
//
// It reads one extension. A line that starts with '{' outside an event is a
// whole event of its own (JSON Lines). Bedrock's ConverseStream events are
// written so when they are not put in data lines.
package sse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is returned, wrapped, for an event or a stream over its
// bound.
var ErrTooLarge = errors.New("sse: the stream is over the size limit")

// Event is one event. It holds its name (the event field, "" when none) and
// its data lines joined by '\n'.
type Event struct {
	Name string
	Data []byte
}

// Reader reads events from a stream. It is used by one goroutine.
type Reader struct {
	br    *bufio.Reader
	max   int
	read  int
	line  []byte
	name  string
	data  []byte
	has   bool
	ended bool
}

// NewReader reads events from r, at most max bytes of it in all. max < 0
// means no bound.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReader(r), max: max}
}

// Read returns the bytes of the stream read so far.
func (r *Reader) Read() int { return r.read }

// Next returns the next event. At the stream's end it returns io.EOF. An
// event the stream began and did not end is dropped, as the rules say. A
// JSON line that is whole is kept. Past the bound the error matches
// ErrTooLarge. A read error is returned as it is.
func (r *Reader) Next() (Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 && !r.has && line[0] == '{' && json.Valid(line) {
				return Event{Data: bytes.Clone(line)}, nil
			}
			return Event{}, err
		}
		if ev, ok := r.field(line); ok {
			return ev, nil
		}
	}
}

// field takes one line; it returns an event when the line ends one.
func (r *Reader) field(line []byte) (Event, bool) {
	switch {
	case len(line) == 0:
		if !r.has {
			r.name = ""
			return Event{}, false
		}
		ev := Event{Name: r.name, Data: r.data}
		r.name, r.data, r.has = "", nil, false
		return ev, true
	case line[0] == ':':
		return Event{}, false // a comment, such as a keep-alive
	case line[0] == '{' && !r.has && r.name == "":
		return Event{Data: bytes.Clone(line)}, true
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte{' '})
	}
	switch string(name) {
	case "event":
		r.name = string(value)
	case "data":
		if r.has {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.has = true
	}
	// id and retry mean nothing to a response read once. Other fields are
	// ignored, as the rules say.
	return Event{}, false
}

// readLine returns the next line without its end, bounded by max. At the
// end of the stream it returns what is left with io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	if r.ended {
		return nil, io.EOF
	}
	r.line = r.line[:0]
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				r.ended = true
			}
			return r.line, err
		}
		r.read++
		if r.max >= 0 && r.read > r.max {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, r.max)
		}
		switch b {
		case '\n':
			return r.line, nil
		case '\r':
			if next, err := r.br.Peek(1); err == nil && next[0] == '\n' {
				r.br.ReadByte()
				r.read++
			}
			return r.line, nil
		}
		r.line = append(r.line, b)
	}
}
