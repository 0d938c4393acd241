package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkRead reads data as the SDK's stdio connection does, returning the
// messages up to the first error other than the end.
func sdkRead(t testing.TB, data []byte) ([]jsonrpc.Message, error) {
	t.Helper()
	conn, err := (&mcp.IOTransport{Reader: io.NopCloser(bytes.NewReader(data)), Writer: nopWriteCloser{}, MaxLineLength: -1}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var msgs []jsonrpc.Message
	for {
		msg, err := conn.Read(context.Background())
		if errors.Is(err, io.EOF) {
			return msgs, nil
		}
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, msg)
	}
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

func nested(open, bottom, close string, n int) string {
	return strings.Repeat(open, n) + bottom + strings.Repeat(close, n)
}

// TestJudgeLine: what a server writes is kept when it is one JSON-RPC
// message (or a batch of them, split), and dropped, with why, otherwise;
// what is kept the SDK reads without error, what is dropped it would not
// have.
func TestJudgeLine(t *testing.T) {
	for _, c := range []struct {
		line  string
		fault lineFault
		msgs  int
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, lineOK, 1},
		{` {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}} ` + "\r", lineOK, 1},
		{`{"jsonrpc":"2.0","id":"a","method":"ping"}`, lineOK, 1},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}`, lineOK, 1},
		{`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/progress","params":{}}]`, lineOK, 2},
		{`{"jsonrpc":"2.0","id":1,"result":` + nested("[", "1", "]", maxLineDepth-1) + `}`, lineOK, 1},
		{"", lineOK, 0},
		{" \t\r", lineOK, 0},
		{"Debugger listening on ws://127.0.0.1:9229/5f1e9c1a", lineNotJSON, 0},
		{`{"jsonrpc":"2.0","id":1,"result":{}} {"x":1}`, lineNotJSON, 0},
		{`{"jsonrpc":"2.0","id":1,"result":{}`, lineNotJSON, 0},
		{"42", lineNotMessage, 0},
		{`"text"`, lineNotMessage, 0},
		{`null`, lineNotMessage, 0},
		{`[]`, lineNotMessage, 0},
		{`[1,2]`, lineNotMessage, 0},
		{`[{"jsonrpc":"2.0","id":1,"result":{}},{"hello":1}]`, lineNotMessage, 0},
		{`{"hello":"world"}`, lineNotMessage, 0},
		{`{"jsonrpc":"2.0","result":{}}`, lineNotMessage, 0},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, lineNotMessage, 0},
		{`{"jsonrpc":"2.0","id":true,"result":{}}`, lineNotMessage, 0},
		{`{"jsonrpc":"2.0","id":1,"error":"text"}`, lineNotMessage, 0},
		{`{"jsonrpc":"2.0","id":1,"result":` + nested("[", "1", "]", maxLineDepth) + `}`, lineTooDeep, 0},
		{nested("[", "", "]", 20000), lineTooDeep, 0},
		{nested(`{"a":`, "1", "}", 20000), lineTooDeep, 0},
		{nested("[", "", "", 20000), lineTooDeep, 0},
		{`"` + strings.Repeat("[", 2000) + `"`, lineNotMessage, 0},
	} {
		msgs, fault := judgeLine([]byte(c.line))
		name := c.line
		if len(name) > 80 {
			name = name[:80]
		}
		if fault != c.fault || len(msgs) != c.msgs {
			t.Errorf("%q: %v, %d messages; want %v, %d", name, fault, len(msgs), c.fault, c.msgs)
		}
		for _, m := range msgs {
			if got, err := sdkRead(t, append(m, '\n')); err != nil || len(got) != 1 {
				t.Errorf("%q: the SDK reads %d messages, %v", name, len(got), err)
			}
		}
		if c.fault != lineOK {
			if _, err := sdkRead(t, []byte(c.line+"\n")); err == nil {
				t.Errorf("%q: dropped, and the SDK reads it", name)
			}
		}
	}
}

// TestLineBoundDrops: between messages, stray lines are dropped; the SDK
// reads every message in order and nothing else; a response nested too
// deep becomes the error response for its id; a line over the bound still
// becomes its stand-in (the too-deep one too, under a bound).
func TestLineBoundDrops(t *testing.T) {
	in := strings.Join([]string{
		"Debugger listening on ws://127.0.0.1:9229/x",
		`{"jsonrpc":"2.0","id":1,"result":{"n":1}}`,
		`[1,2,3]`,
		"7",
		nested("[", "", "]", 20000),
		`{"jsonrpc":"2.0","id":2,"result":{"n":2}}` + "\r",
		`{"jsonrpc":"2.0","id":3,"result":` + nested("[", "", "]", 20000) + `}`,
		`[{"jsonrpc":"2.0","id":4,"result":{}},{"jsonrpc":"2.0","id":5,"result":{}}]`,
		`{"jsonrpc":"2.0","id":6,"result":"` + strings.Repeat("y", 300) + `"}`,
		"",
		`{"jsonrpc":"2.0","id":7,"result":{"n":7}}`,
	}, "\n")
	over := &Oversize{Server: "s", Limit: 100, Marker: json.RawMessage(`"conduit: result over the limit test"`), Logger: discardLogger()}
	for _, limit := range []int{0, 250} {
		for _, piece := range []int{1, 7, 64, 1 << 20} {
			var logs bytes.Buffer
			drops := newLineDrops("s", slog.New(slog.NewTextHandler(&logs, nil)))
			b := &lineBound{reader: reader{src: &pieces{data: []byte(in), n: piece}}, limit: limit, reject: over.reject, drops: drops}
			out, err := io.ReadAll(b)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := sdkRead(t, out)
			if err != nil {
				t.Fatalf("limit %d, piece %d: the SDK fails: %v on %.300q", limit, piece, err, out)
			}
			var got []string
			for _, m := range msgs {
				r := m.(*jsonrpc.Response)
				s := r.ID.Raw().(int64)
				got = append(got, string(rune('0'+s)))
				var we *jsonrpc.Error
				switch {
				case s == 3 && limit == 0 && (!errors.As(r.Error, &we) || we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, "nested deeper than 1000 levels")):
					t.Errorf("id 3: %v", r.Error)
				case (s == 3 || s == 6) && limit > 0 && (!errors.As(r.Error, &we) || we.Code != CodeResultTooLarge):
					t.Errorf("id %d: %v", s, r.Error)
				case s != 3 && !(s == 6 && limit > 0) && r.Error != nil:
					t.Errorf("id %d: %v", s, r.Error)
				}
			}
			if strings.Join(got, "") != "1234567" {
				t.Errorf("limit %d, piece %d: ids %q", limit, piece, got)
			}
			if !strings.Contains(logs.String(), `start="Debugger listening on ws://127.0.0.1:9229/x"`) {
				t.Errorf("log %s", logs.String())
			}
		}
	}
}

// TestLineDropsRateLimit: one WARN a period, the next saying how many
// were dropped unlogged; the start of a line is cut and escaped.
func TestLineDropsRateLimit(t *testing.T) {
	var logs bytes.Buffer
	d := newLineDrops("s", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})))
	now := time.Unix(1000, 0)
	d.now = func() time.Time { return now }
	for range 5 {
		d.note([]byte("\x1b[31mred\u202e"+strings.Repeat("é", 40)), lineNotJSON, nil)
	}
	now = now.Add(time.Second)
	id, _ := jsonrpc.MakeID(float64(9))
	d.note([]byte(`{"id":9}`), lineTooDeep, &id)
	want := `level=WARN msg="conduit: a line of the server's stdout was dropped" server=s reason="not JSON" bytes=91 start=\u001b[31mred\u202eéééééééééééééééééééééééé...` + "\n" +
		`level=WARN msg="conduit: a response on the server's stdout could not be read; its request is answered with an error" server=s reason="nested deeper than 1000 levels" bytes=8 start="{\"id\":9}" unlogged=4 id=9` + "\n"
	if logs.String() != want {
		t.Errorf("logs\n%s\nwant\n%s", logs.String(), want)
	}
}

// FuzzJudgeLine: judgeLine keeps exactly what the SDK's stdio reader
// reads without ending the session, one message a line: every message it
// keeps the SDK reads as one message, and a line it drops the SDK fails
// on (a blank line is neither). Run with
// go test -run '^$' -fuzz FuzzJudgeLine -fuzztime 60s .
func FuzzJudgeLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":"b","error":{"code":1,"message":"m"}}]`,
		"Debugger listening on ws://127.0.0.1:9229/5f1e9c1a-8b1d-4b7a-9d8e-3c2f1a0b9e7d",
		"\x1b[33mwarning\x1b[0m",
		`[1,"two",{"three":3}]`,
		"42", `"s"`, "null", "[]", "{}", `{"hello":"world"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}} {"x":1}`,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"result":"\"[[[[\\"}`,
		`{"jsonrpc":"2.0","id":1,"result":` + nested("[", "1", "]", 999) + `}`,
		`{"jsonrpc":"2.0","id":1,"result":` + nested("[", "1", "]", 1000) + `}`,
		nested("[", "", "]", 20000),
		nested(`{"a":`, "1", "}", 2000),
		"\xff\xfe{}",
		`{"jsonrpc":"2.0","id":1,"result":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.ContainsAny(line, "\n") {
			return // one line
		}
		msgs, fault := judgeLine(line)
		for _, m := range msgs {
			if bytes.IndexByte(m, '\n') >= 0 {
				t.Fatalf("a kept message spans lines: %q", m)
			}
			if got, err := sdkRead(t, append(bytes.Clone(m), '\n')); err != nil || len(got) != 1 {
				t.Fatalf("kept %q: the SDK reads %d messages, %v", m, len(got), err)
			}
		}
		got, err := sdkRead(t, append(bytes.Clone(line), '\n'))
		switch {
		case fault != lineOK && err == nil:
			t.Fatalf("dropped %q (%v), and the SDK reads it: %d messages", line, fault, len(got))
		case fault == lineOK && len(msgs) == 0 && (err != nil || len(got) != 0):
			t.Fatalf("blank %q: the SDK reads %d, %v", line, len(got), err)
		}
	})
}

// BenchmarkJudgeLine measures the judging of a response of 1 KiB and of
// 1 MiB, the cost each message of a stdio server now pays before the SDK
// decodes it, beside the SDK's own reading of the same line.
func BenchmarkJudgeLine(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		line := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("a", size) + `"}]}}`)
		b.Run("judge/"+ByteSize(size), func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if _, fault := judgeLine(line); fault != lineOK {
					b.Fatal(fault)
				}
			}
		})
		b.Run("sdk/"+ByteSize(size), func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			data := append(bytes.Clone(line), '\n')
			for b.Loop() {
				if msgs, err := sdkRead(b, data); err != nil || len(msgs) != 1 {
					b.Fatal(err)
				}
			}
		})
	}
}
