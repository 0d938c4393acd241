package demo

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
)

func TestPlay(t *testing.T) {
	start := time.Now()
	rep, err := Play(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Play took %v", d)
	}
	if len(rep.Servers) != 2 || len(rep.Tools) != 5 || len(rep.Turns) != 5 {
		t.Fatalf("report %+v", rep)
	}
	if last := rep.Turns[4]; !last.Halted || last.Calls[0].Approval != "halt" {
		t.Errorf("last turn %+v", last)
	}
	if c := rep.Turns[1].Calls[0]; c.Name != "notes__delete_note" || c.Decision != "deny" || c.Outcome != "denied" {
		t.Errorf("tainted delete %+v", c)
	}
}

func TestFetchProgress(t *testing.T) {
	ctx := context.Background()
	srvs, stop, err := InProcess(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cl, err := conduit.NewClient(ctx, srvs[0], &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var mu sync.Mutex
	var got []conduit.Progress
	res, err := cl.CallTool(ctx, "fetch", map[string]any{"url": RecipeURL}, &conduit.CallOptions{
		Progress: func(_ *conduit.Call, p conduit.Progress) { mu.Lock(); got = append(got, p); mu.Unlock() },
	})
	if err != nil || res.IsError {
		t.Fatalf("fetch: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0].Total != 3 {
		t.Errorf("progress %+v", got)
	}
	if _, err := NewServer("mail"); err == nil {
		t.Error("NewServer(mail) did not fail")
	}
}
