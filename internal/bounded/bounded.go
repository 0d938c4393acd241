// Package bounded runs code that may ignore its context (a program's own
// Source or local tool) so that its caller is answered when the context
// ends all the same.
package bounded

import (
	"context"
	"time"
)

// DefaultCallTimeout bounds one governed call in all, approval and hooks
// included, when its options set no CallTimeout. The hub applies it; the
// callers that bound a call themselves use the same.
const DefaultCallTimeout = 5 * time.Minute

// Run returns f(ctx), run on a goroutine of its own; when ctx ends first
// it returns ended's error instead, and f's late answer, if it ever
// comes, is dropped (f may still be running: the goroutine ends with f).
// An answer that is ready when ctx ends wins over the end. A ctx that
// never ends runs f on the caller's goroutine.
func Run[T any](ctx context.Context, f func(context.Context) (T, error), ended func() error) (T, error) {
	if ctx.Done() == nil {
		return f(ctx)
	}
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1) // buffered: a late f never blocks
	go func() {
		v, err := f(ctx)
		done <- outcome{v, err}
	}()
	select {
	case out := <-done:
		return out.v, out.err
	case <-ctx.Done():
		select {
		case out := <-done:
			return out.v, out.err
		default:
		}
		var zero T
		return zero, ended()
	}
}
