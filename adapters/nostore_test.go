package adapters_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/store"
)

// A hub given no store keeps its claims in a memory of its own, which a
// copy of the state resumed by another process never sees: resuming a
// state with pending calls over it is refused with ErrNoStore, nothing
// sent. A store given, even this process's memory, is a choice and is
// taken; a state with nothing pending needs no claims.
func TestResumeNeedsStore(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{noGone: true, noStore: true, policy: askPolicy(), approver: conduit.DeferAll("waiting for the user")})
	if hub.StoreGiven() {
		t.Fatal("StoreGiven with no Options.Store")
	}
	ctx := context.Background()
	p := adapters.Anthropic
	conv, err := adapters.NewConversation(ctx, hub, p, stateOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	calm, err := conv.State() // before the turn: nothing pending
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Execute(ctx, script(p, scripted{id: "c1", name: "lab__echo", args: map[string]any{"message": "hi"}})); err != nil {
		t.Fatal(err)
	}
	state, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	_, err = adapters.ResumeConversation(ctx, hub, p, state, stateOpts(nil))
	if !errors.Is(err, adapters.ErrNoStore) {
		t.Fatalf("resuming a pending state over a hub with no store: %v, want ErrNoStore", err)
	}
	if len(l.sent()) != 0 {
		t.Errorf("sent %v", l.sent())
	}
	if _, err := adapters.ResumeConversation(ctx, hub, p, calm, stateOpts(nil)); err != nil {
		t.Errorf("resuming a state with nothing pending: %v", err)
	}
	// The explicit choice of one process.
	mem := store.NewMemory()
	defer mem.Close()
	back, err := adapters.ResumeConversation(ctx, hub, p, state, stateOpts(mem))
	if err != nil {
		t.Fatalf("resuming with StateOptions.Claims given: %v", err)
	}
	if _, err := back.Resume(ctx, map[string]adapters.Ruling{"c1": {Allow: true}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.sent(), []string{"echo"}) {
		t.Errorf("sent %v, want the approved echo once", l.sent())
	}
}
