package testenv_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// TestBufferConcurrent: writers and a reader at once lose no write (run
// it with -race).
func TestBufferConcurrent(t *testing.T) {
	var b testenv.Buffer
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "g%d-%d\n", g, i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
	if !strings.Contains(b.String(), "g7-99\n") {
		t.Errorf("a write is missing")
	}
}
