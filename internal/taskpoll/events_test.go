package taskpoll

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// TestTaskEvents: a tools/call's event stream read through events
// keeps every line but a task answer's byte for byte, lines longer than
// the reader's buffer included, and the task answer names its task.
func TestTaskEvents(t *testing.T) {
	long := `data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 10<<10) + `"}]}}`
	task := `data:{"jsonrpc":"2.0","id":2,"result":{"resultType":"task","taskId":"t-1","status":"working","pollIntervalMs":100}}`
	in := "event: message\r\n" + long + "\n\n" + task + "\n\nid: 7\ndata: {\"no\":\"task\"}"
	p := New(nil)
	src := io.NopCloser(strings.NewReader(in))
	ev := &events{src: src, r: bufio.NewReaderSize(src, 4<<10), p: p, route: &Route{}}
	out, err := io.ReadAll(ev)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(out), "\n")
	if lines[0] != "event: message\r" || lines[1] != long || lines[len(lines)-1] != `data: {"no":"task"}` {
		t.Fatalf("lines changed: %q ... %q", lines[0], lines[len(lines)-1])
	}
	if !bytes.Contains(out, []byte(MetaRef)) || bytes.Contains(out, []byte(`"resultType":"task"`)) {
		t.Fatalf("the task answer was not rewritten:\n%s", lines[3])
	}
	if len(p.routes) != 1 {
		t.Fatalf("%d task routes kept, want 1", len(p.routes))
	}
}

// TestInterval: a server's poll interval is kept within the bounds, a
// value too large to convert included.
func TestInterval(t *testing.T) {
	for ms, want := range map[int64]time.Duration{
		-1: defaultTaskPoll, 0: defaultTaskPoll, 1: minTaskPoll, 100: 100 * time.Millisecond,
		60000: time.Minute, 60001: maxTaskPoll, 9_300_000_000_000: maxTaskPoll, math.MaxInt64: maxTaskPoll,
	} {
		if got := Interval(ms); got != want {
			t.Errorf("Interval(%d) = %v, want %v", ms, got, want)
		}
	}
}
