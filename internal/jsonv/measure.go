package jsonv

import (
	"encoding/json"
	"math"
	"strconv"
)

// Measure walks a JSON value held as Go values (what encoding/json decodes
// into, or what a program builds) without recursion, for its depth and the
// length of its JSON text, and stops once either passes its limit. The
// length is never more than the compact JSON encoding/json would write
// (strings and keys are counted unescaped; numbers as encoding/json
// formats them), save for JSON text held as json.RawMessage, counted as
// given: so a value it finds over a limit of bytes is over it.
//
// The zero value has no limits. One Measure may measure several values
// one after another, adding up.
type Measure struct {
	MaxDepth, MaxBytes int // 0: no limit
	// Depth is the greatest nesting depth seen: an object or array is
	// one deeper than the container it is in. Size is the bytes counted.
	Depth, Size int
	// Over is set once Depth passes MaxDepth or Size passes MaxBytes; the
	// walk then stops.
	Over bool
}

type measured struct {
	v     any
	depth int // of the container v is in
}

// Value measures v, held in a container of the given depth (0 for a
// value at the top).
func (m *Measure) Value(v any, depth int) {
	// Arguments are mostly shallow and small: the walk's stack and the
	// number buffer start on the goroutine's stack.
	var stackBuf [16]measured
	var numBuf [32]byte
	stack := append(stackBuf[:0], measured{v, depth})
	num := numBuf[:0]
	for len(stack) > 0 && !m.Over {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := e.v.(type) {
		case nil:
			m.add(4)
		case bool:
			if x {
				m.add(4)
			} else {
				m.add(5)
			}
		case string:
			m.add(len(x) + 2)
		case json.Number:
			m.add(len(x))
		case float64:
			num = appendFloat(num[:0], x, 64)
			m.add(len(num))
		case float32:
			num = appendFloat(num[:0], float64(x), 32)
			m.add(len(num))
		case int:
			num = strconv.AppendInt(num[:0], int64(x), 10)
			m.add(len(num))
		case int64:
			num = strconv.AppendInt(num[:0], x, 10)
			m.add(len(num))
		case map[string]any:
			m.enter(e.depth + 1)
			m.add(2 + max(len(x)-1, 0)) // braces, commas
			for k, v := range x {
				m.add(len(k) + 3) // quotes, colon
				stack = append(stack, measured{v, e.depth + 1})
			}
		case []any:
			m.enter(e.depth + 1)
			m.add(2 + max(len(x)-1, 0)) // brackets, commas
			for _, v := range x {
				stack = append(stack, measured{v, e.depth + 1})
			}
		case json.RawMessage:
			m.raw(x, e.depth)
		default:
			// Other Go values (structs, typed maps and slices) as they
			// would be sent.
			data, err := json.Marshal(x)
			if err != nil {
				continue // whoever decodes or sends it reports it
			}
			m.raw(data, e.depth)
		}
	}
}

func (m *Measure) raw(data []byte, depth int) {
	limit := 0
	if m.MaxDepth > 0 {
		// At least 1, so that the scan stops once past the limit.
		limit = max(m.MaxDepth-depth, 1)
	}
	m.enter(depth + RawDepth(data, limit))
	m.add(len(data))
}

func (m *Measure) enter(depth int) {
	m.Depth = max(m.Depth, depth)
	if m.MaxDepth > 0 && depth > m.MaxDepth {
		m.Over = true
	}
}

func (m *Measure) add(n int) {
	m.Size += n
	if m.MaxBytes > 0 && m.Size > m.MaxBytes {
		m.Over = true
	}
}

// appendFloat appends f as encoding/json writes it (ES6 number
// formatting). A value JSON cannot hold (NaN, an infinity) is counted as
// the shortest number, one byte: encoding it fails anyway.
func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// RawDepth returns the greatest nesting depth of data, a JSON text, or a
// depth just past max as soon as it is passed (max 0: no limit). It scans
// without recursion and does not check that data is JSON: decoding does
// that afterwards.
func RawDepth[T ~string | ~[]byte](data T, max int) int {
	depth, d := 0, 0
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		b := data[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case b == '\\':
				esc = true
			case b == '"':
				inStr = false
			}
			continue
		}
		switch b {
		case '"':
			inStr = true
		case '{', '[':
			d++
			if d > depth {
				depth = d
				if max > 0 && depth > max {
					return depth
				}
			}
		case '}', ']':
			d--
		}
	}
	return depth
}
