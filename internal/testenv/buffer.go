// A buffer that a process or logger writes while the test reads it.

package testenv

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it, safe for concurrent use. A test
// hands it to a logger or a command's output, and reads it meanwhile.
// The zero value is an empty buffer.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns all written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
