package digest

import (
	"strings"
	"testing"
)

func TestDigest(t *testing.T) {
	d := Of([]byte("abc"))
	if d != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("Of = %s", d)
	}
	if err := Check(d); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "sha256:", "md5:" + d[7:], strings.ToUpper(d), "sha256:" + strings.ToUpper(d[7:]), d[:len(d)-1], d + "0", "sha256:" + strings.Repeat("g", 64), " " + d} {
		if err := Check(bad); err == nil || !strings.Contains(err.Error(), `is not "sha256:" and 64 lowercase hex digits`) {
			t.Errorf("Check(%q) = %v", bad, err)
		}
	}
}

// A call's digest is of its name, a newline and its arguments: the keys of
// claims recorded by an earlier release are found again.
func TestCall(t *testing.T) {
	if got, want := Call("fs__write", []byte(`{"path":"a"}`)), Of([]byte("fs__write\n"+`{"path":"a"}`)); got != want {
		t.Fatalf("Call = %s, want %s", got, want)
	}
	if got := Call("a", []byte("b")); got != "sha256:7e18f737311b2dc3b2f269dd78396b0351f14fb66efa879f768cb23181883c78" {
		t.Fatalf("Call(a, b) = %s", got)
	}
}
