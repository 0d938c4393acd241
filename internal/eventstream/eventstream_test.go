package eventstream

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	Write(&b, map[string]string{":event-type": "contentBlockDelta", ":message-type": "event"}, []byte(`{"contentBlockIndex":0}`))
	Write(&b, map[string]string{":exception-type": "throttlingException", ":message-type": "exception"}, []byte(`{"message":"slow down"}`))
	m, err := Read(&b, 1<<10)
	if typ, exc := m.Type(); err != nil || typ != "contentBlockDelta" || exc || string(m.Payload) != `{"contentBlockIndex":0}` {
		t.Fatalf("%+v %v", m, err)
	}
	m, err = Read(&b, 1<<10)
	if typ, exc := m.Type(); err != nil || typ != "throttlingException" || !exc {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := Read(&b, 1<<10); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
}

// A message altered, cut or over the bound is refused, never read.
func TestMalformed(t *testing.T) {
	var b bytes.Buffer
	Write(&b, map[string]string{":event-type": "messageStop"}, []byte(`{"stopReason":"tool_use"}`))
	good := b.Bytes()
	altered := bytes.Clone(good)
	altered[len(altered)-6] ^= 1
	for name, in := range map[string][]byte{"altered": altered, "cut": good[:len(good)-3], "prelude": good[:5]} {
		if _, err := Read(bytes.NewReader(in), 1<<10); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Read(bytes.NewReader(good), 20); !errors.Is(err, ErrMalformed) {
		t.Errorf("over the bound: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	var b bytes.Buffer
	Write(&b, map[string]string{":event-type": "contentBlockStop", ":content-type": "application/json"}, []byte(`{"contentBlockIndex":1}`))
	f.Add(b.Bytes())
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0, 5, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			m, err := Read(r, 1<<16)
			if err != nil {
				return
			}
			var again bytes.Buffer
			Write(&again, m.Headers, m.Payload)
			back, err := Read(&again, -1)
			if err != nil || !bytes.Equal(back.Payload, m.Payload) || len(back.Headers) != len(m.Headers) {
				t.Fatalf("a message read does not write back: %v", err)
			}
		}
	})
}
