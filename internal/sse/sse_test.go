package sse

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func readAll(t testing.TB, in string, max int) ([]Event, error) {
	r := NewReader(strings.NewReader(in), max)
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, ev)
	}
}

func TestEvents(t *testing.T) {
	in := ": keep-alive\r\nevent: message_start\r\ndata: {\"a\":\r\ndata:1}\r\n\r\nid: 7\nretry: 10\ndata: [DONE]\n\n" +
		"{\"messageStart\": {}}\n\rdata: cut at the end"
	got, err := readAll(t, in, -1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{Name: "message_start", Data: []byte("{\"a\":\n1}")}, {Data: []byte("[DONE]")}, {Data: []byte(`{"messageStart": {}}`)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestLastJSONLine(t *testing.T) {
	got, _ := readAll(t, "{\"a\": 1}\n{\"b\": 2}", -1)
	if len(got) != 2 || string(got[1].Data) != `{"b": 2}` {
		t.Fatalf("%q", got)
	}
	got, _ = readAll(t, "{\"a\": 1}\n{\"b\": ", -1)
	if len(got) != 1 {
		t.Fatalf("a cut JSON line is an event: %q", got)
	}
}

func TestBound(t *testing.T) {
	_, err := readAll(t, "data: "+strings.Repeat("x", 100)+"\n\n", 50)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v", err)
	}
	// A line that never ends is bounded too.
	r := NewReader(io.MultiReader(strings.NewReader("data: "), endlessX{}), 1<<10)
	if _, err := r.Next(); !errors.Is(err, ErrTooLarge) || r.Read() > 1<<10+1 {
		t.Fatalf("err %v after %d bytes", err, r.Read())
	}
}

type endlessX struct{}

func (endlessX) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 'x'
	}
	return len(b), nil
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("event: a\ndata: b\n\n"), 100)
	f.Add([]byte("{\"x\": 1}\r\n: c\r\rdata:\n\n"), 5)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		r := NewReader(bytes.NewReader(data), max)
		total := 0
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			total += len(ev.Data)
			if total > len(data) {
				t.Fatalf("%d bytes of events from %d", total, len(data))
			}
		}
		if r.Read() > len(data) {
			t.Fatalf("read %d of %d", r.Read(), len(data))
		}
	})
}
