//go:build !linux

package cli

import "os"

// IsTerminal reports whether f is a character device. That is the best a
// standard-library check can do here. It takes /dev/null for a terminal.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
