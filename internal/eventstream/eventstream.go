// Package eventstream reads and writes AWS's binary event stream framing
// (application/vnd.amazon.eventstream). Bedrock's ConverseStream sends its
// events over HTTP in it. Each message has four parts:
//
//   - a prelude: total and header lengths, and a CRC32;
//   - headers;
//   - a payload;
//   - a CRC32 of the whole.
package eventstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// ErrMalformed is returned, wrapped, for a message that is not one.
var ErrMalformed = errors.New("eventstream: malformed message")

// Message is one message: its headers of string value and its payload. The
// headers are :event-type, :message-type, :exception-type and :content-type.
type Message struct {
	Headers map[string]string
	Payload []byte
}

// Type is the event's or exception's type. It also reports whether it is an
// exception (or an error message).
func (m Message) Type() (string, bool) {
	switch m.Headers[":message-type"] {
	case "exception":
		return m.Headers[":exception-type"], true
	case "error":
		return m.Headers[":error-code"], true
	}
	return m.Headers[":event-type"], false
}

// Read reads one message from r, of at most max bytes. max < 0 means no
// bound. At the stream's end it returns io.EOF.
func Read(r io.Reader, max int) (Message, error) {
	var prelude [12]byte
	if _, err := io.ReadFull(r, prelude[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Message{}, fmt.Errorf("%w: the stream ends inside a prelude", ErrMalformed)
		}
		return Message{}, err
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	headers := binary.BigEndian.Uint32(prelude[4:8])
	if crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:12]) {
		return Message{}, fmt.Errorf("%w: the prelude's checksum is wrong", ErrMalformed)
	}
	if total < 16 || uint64(headers) > uint64(total)-16 {
		return Message{}, fmt.Errorf("%w: lengths %d and %d", ErrMalformed, total, headers)
	}
	if max >= 0 && uint64(total) > uint64(max) {
		return Message{}, fmt.Errorf("%w: a message of %d bytes, over %d", ErrMalformed, total, max)
	}
	rest := make([]byte, total-12)
	if _, err := io.ReadFull(r, rest); err != nil {
		return Message{}, fmt.Errorf("%w: the stream ends inside a message", ErrMalformed)
	}
	body, sum := rest[:len(rest)-4], binary.BigEndian.Uint32(rest[len(rest)-4:])
	crc := crc32.NewIEEE()
	crc.Write(prelude[:])
	crc.Write(body)
	if crc.Sum32() != sum {
		return Message{}, fmt.Errorf("%w: the message's checksum is wrong", ErrMalformed)
	}
	m := Message{Headers: map[string]string{}, Payload: body[headers:]}
	h := body[:headers]
	for len(h) > 0 {
		n := int(h[0])
		if len(h) < 1+n+1 {
			return Message{}, fmt.Errorf("%w: a header is cut", ErrMalformed)
		}
		name, typ := string(h[1:1+n]), h[1+n]
		h = h[2+n:]
		size, ok := valueSize(typ, h)
		if !ok || len(h) < size {
			return Message{}, fmt.Errorf("%w: header %q of type %d", ErrMalformed, name, typ)
		}
		if typ == 7 { // a string: its length, then its bytes
			m.Headers[name] = string(h[2:size])
		}
		h = h[size:]
	}
	return m, nil
}

// valueSize is the size of a header value of type typ at the start of h.
func valueSize(typ byte, h []byte) (int, bool) {
	switch typ {
	case 0, 1: // true, false
		return 0, true
	case 2: // byte
		return 1, true
	case 3: // int16
		return 2, true
	case 4: // int32
		return 4, true
	case 5, 8: // int64, timestamp
		return 8, true
	case 6, 7: // bytes, string
		if len(h) < 2 {
			return 0, false
		}
		return 2 + int(binary.BigEndian.Uint16(h)), true
	case 9: // uuid
		return 16, true
	}
	return 0, false
}

// Write writes one message of string headers and payload to w.
func Write(w io.Writer, headers map[string]string, payload []byte, order ...string) error {
	var h []byte
	if len(order) == 0 {
		for k := range headers {
			order = append(order, k)
		}
	}
	for _, k := range order {
		v := headers[k]
		h = append(h, byte(len(k)))
		h = append(h, k...)
		h = append(h, 7)
		h = binary.BigEndian.AppendUint16(h, uint16(len(v)))
		h = append(h, v...)
	}
	total := 12 + len(h) + len(payload) + 4
	msg := binary.BigEndian.AppendUint32(nil, uint32(total))
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(h)))
	msg = binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg))
	msg = append(msg, h...)
	msg = append(msg, payload...)
	msg = binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg))
	_, err := w.Write(msg)
	return err
}
