// Package ttl checks the lifetimes, windows and leases given to a store,
// for every implementation alike.
package ttl

import (
	"fmt"
	"time"
)

// Check returns an error unless d is positive: every key of a store
// expires.
func Check(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("store: lifetime %v is not positive", d)
	}
	return nil
}
