package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/storetest"
)

// openMemory opens one Memory per namespace and test: a Memory is its own
// backend, so the "clients" of one namespace are the same store.
func openMemory() storetest.Opener {
	var mu sync.Mutex
	stores := map[string]*store.Memory{}
	return func(t *testing.T, namespace string) store.Store {
		mu.Lock()
		defer mu.Unlock()
		if m, ok := stores[namespace]; ok {
			return m
		}
		m := store.NewMemory()
		stores[namespace] = m
		t.Cleanup(func() { m.Close() })
		return m
	}
}

func TestMemory(t *testing.T) {
	storetest.Run(t, openMemory())
}

// Expired entries of every kind are dropped, and Close leaves no goroutine
// behind, not even one waiting for a lock.
func TestMemoryNothingLeft(t *testing.T) {
	before := testenv.Goroutines()
	ctx := context.Background()
	m := store.NewMemory()
	const life = 100 * time.Millisecond
	for i := range 1000 {
		key := string(rune('a' + i%26))
		m.AddMembers(ctx, key, life, "web")
		m.Claim(ctx, key, life)
		m.Hit(ctx, key, 10, life)
		m.Acquire(ctx, key, 10, life)
	}
	if _, err := m.Lock(ctx, "held", life); err != nil {
		t.Fatal(err)
	}
	if m.Len() == 0 {
		t.Fatal("nothing stored")
	}
	time.Sleep(2 * life)
	if n := m.Len(); n != 0 {
		t.Errorf("%d entries left after they all expired", n)
	}

	tok, err := m.Lock(ctx, "held", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_ = tok
	waiting := make(chan error)
	go func() {
		_, err := m.Lock(ctx, "held", time.Hour)
		waiting <- err
	}()
	time.Sleep(20 * time.Millisecond)
	m.Close()
	if err := <-waiting; err != store.ErrClosed {
		t.Errorf("a waiter's Lock after Close: %v, want ErrClosed", err)
	}
	if n := m.Len(); n != 0 {
		t.Errorf("Len after Close = %d", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		extra := 0
		for id := range testenv.Goroutines() {
			if _, ok := before[id]; !ok {
				extra++
			}
		}
		if extra == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after Close", extra)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
