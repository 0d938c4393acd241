package testenv

import (
	"runtime"
	"strconv"
	"strings"
)

// Goroutines returns the stacks of all goroutines by id, for tests that
// check that nothing outlives a Close.
func Goroutines() map[int]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[int]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, " [")
		id, err := strconv.Atoi(strings.TrimPrefix(head, "goroutine "))
		if err == nil {
			out[id] = g
		}
	}
	return out
}
