// Package names holds the rule for a server's id, which the hub and the
// lock file both check.
package names

import (
	"fmt"
	"strings"
)

// ServerID reports why id cannot be a server id, or nil. Server ids are
// the server part of exposed names and policy patterns. So they must be
// exposable as they are, and never contain the "__" separator.
func ServerID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("server id is empty")
	case strings.Contains(id, "__"):
		return fmt.Errorf("server id %q contains \"__\", the separator of exposed names", id)
	case len(id) > 32:
		return fmt.Errorf("server id %q is longer than 32 characters", id)
	case !exposable(id):
		return fmt.Errorf("server id %q must match ^[A-Za-z_][A-Za-z0-9_-]*$", id)
	}
	return nil
}

// exposable reports whether id matches ^[A-Za-z_][A-Za-z0-9_-]*$, the
// characters every provider accepts in a tool's name.
func exposable(id string) bool {
	for i, r := range id {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '-')) {
			return false
		}
	}
	return true
}
