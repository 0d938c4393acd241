package cli

import (
	"context"
	"slices"
	"testing"
)

type spanKey struct{}

// TestCommandSpan checks that every command runs in the context its
// Telemetry.Command made, except serve, whose requests each start their
// own trace (or continue their client's).
func TestCommandSpan(t *testing.T) {
	env, _, _ := testEnv("")
	var started, ended []string
	env.Telemetry = &Telemetry{Command: func(ctx context.Context, name string) (context.Context, func(int)) {
		started = append(started, name)
		return context.WithValue(ctx, spanKey{}, name), func(int) { ended = append(ended, name) }
	}}
	for _, name := range []string{"list", "serve"} {
		var seen any
		env.run(context.Background(), command{name: name, run: func(ctx context.Context, _ *Env, _ []string) error {
			seen = ctx.Value(spanKey{})
			return nil
		}}, nil)
		if want := map[string]any{"list": "list", "serve": nil}[name]; seen != want {
			t.Errorf("%s ran in span %v, want %v", name, seen, want)
		}
	}
	if !slices.Equal(started, []string{"list"}) || !slices.Equal(ended, []string{"list"}) {
		t.Errorf("command spans started %v, ended %v", started, ended)
	}
}
