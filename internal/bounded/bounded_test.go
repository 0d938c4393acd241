package bounded_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/bounded"
)

var errEnded = errors.New("ended")

func ended() error { return errEnded }

func TestRun(t *testing.T) {
	// An answer in time is the answer.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := bounded.Run(ctx, func(context.Context) (int, error) { return 7, nil }, ended)
	if v != 7 || err != nil {
		t.Fatalf("in time: %v, %v", v, err)
	}

	// Code that ignores its context is abandoned when the context ends,
	// and its late answer cannot block it.
	release := make(chan struct{})
	finished := make(chan struct{})
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	v, err = bounded.Run(ctx, func(context.Context) (int, error) {
		defer close(finished)
		<-release
		return 1, nil
	}, ended)
	if v != 0 || !errors.Is(err, errEnded) {
		t.Fatalf("stuck: %v, %v", v, err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %v", el)
	}
	close(release)
	<-finished

	// A context that never ends waits for the answer, however late.
	v, err = bounded.Run(context.Background(), func(context.Context) (int, error) {
		time.Sleep(20 * time.Millisecond)
		return 3, errEnded
	}, func() error { t.Fatal("ended called"); return nil })
	if v != 3 || !errors.Is(err, errEnded) {
		t.Fatalf("background: %v, %v", v, err)
	}
}
