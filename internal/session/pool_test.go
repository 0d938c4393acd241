package session

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// fake is a session that connects at once and records its end.
type fake struct {
	principal string
	ready     chan struct{}
	closed    bool
}

type fakes struct {
	mu      sync.Mutex
	evicted []string
}

func (f *fakes) hooks() Hooks[*fake] {
	return Hooks[*fake]{
		Open: func(p string) (func() (*fake, error), error) {
			if p == "mallory" {
				return nil, errors.New("no credentials")
			}
			return func() (*fake, error) { return &fake{principal: p, ready: make(chan struct{})}, nil }, nil
		},
		Run: func(ctx context.Context, c *fake) {
			close(c.ready)
			<-ctx.Done()
		},
		Ready: func(c *fake) <-chan struct{} { return c.ready },
		Close: func(c *fake, started bool) {
			f.mu.Lock()
			c.closed = true
			f.mu.Unlock()
			if !started {
				close(c.ready)
			}
		},
		Evict: func(p string, _ bool, close func()) {
			close()
			f.mu.Lock()
			f.evicted = append(f.evicted, p)
			f.mu.Unlock()
		},
	}
}

// A full pool closes the session idle the longest for a new principal,
// refuses one when every session is busy, and a principal the owner
// refuses gets the owner's error first.
func TestPoolBound(t *testing.T) {
	var f fakes
	var runs sync.WaitGroup
	p := New(context.Background(), &runs, "srv", 2, 0, f.hooks())
	ctx := context.Background()
	a, releaseA, err := p.Get(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	_, releaseB, _ := p.Get(ctx, "bob")
	if _, _, err := p.Get(ctx, "cy"); !errors.As(err, new(*BusyError)) {
		t.Fatalf("full and busy: %v", err)
	}
	if _, _, err := p.Get(ctx, "mallory"); err == nil || errors.As(err, new(*BusyError)) {
		t.Fatalf("refused principal: %v", err)
	}
	releaseA()
	time.Sleep(time.Millisecond) // ada idle longer than bob
	releaseB()
	if _, release, err := p.Get(ctx, "cy"); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	if !slices.Equal(f.evicted, []string{"ada"}) || !a.closed {
		t.Fatalf("evicted %v (ada closed: %v)", f.evicted, a.closed)
	}
	if got := len(p.All()); got != 2 {
		t.Fatalf("%d sessions", got)
	}
	p.Close()
	runs.Wait()
	if _, _, err := p.Get(ctx, "ada"); !errors.Is(err, ErrClosed) || !p.Closed() {
		t.Fatalf("closed pool: %v", err)
	}
}

// An idle session is closed after the idle time; one in use is not.
func TestPoolIdle(t *testing.T) {
	var f fakes
	var runs sync.WaitGroup
	p := New(context.Background(), &runs, "srv", 4, 20*time.Millisecond, f.hooks())
	defer p.Close()
	ctx := context.Background()
	_, releaseA, _ := p.Get(ctx, "ada")
	_, releaseB, _ := p.Get(ctx, "bob")
	defer releaseB()
	releaseA()
	deadline := time.Now().Add(10 * time.Second)
	for len(p.All()) != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if all := p.All(); len(all) != 1 || all[0].principal != "bob" {
		t.Fatalf("after idle: %v", all)
	}
	if _, _, ok := p.Peek("ada"); ok {
		t.Fatal("Peek found the closed session")
	}
}
