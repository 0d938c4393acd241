package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/redisstore"
	"github.com/conduitmcp/conduit/store/storetest"
)

func TestMain(m *testing.M) {
	// Quiet: the tests stop Redis on purpose, and go-redis logs every
	// failed dial.
	logging.Disable()
	storetest.ClaimerMain(func(url string) (store.Store, error) { return redisstore.Open(url, nil) })
	os.Exit(m.Run())
}

func open(t *testing.T, url string, opts *redisstore.Options) *redisstore.Store {
	t.Helper()
	s, err := redisstore.Open(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	r := testenv.Redis(t, nil)
	storetest.Run(t, func(t *testing.T, namespace string) store.Store {
		return open(t, r.URL, &redisstore.Options{Prefix: namespace})
	})
}

// Several OS processes race for one claim: exactly one wins and sends; the
// others find it pending or completed, and the result is the winner's.
func TestClaimAcrossProcesses(t *testing.T) {
	r := testenv.Redis(t, nil)
	storetest.ClaimAcrossProcesses(t, r.URL, func(url string) (store.Store, error) { return redisstore.Open(url, nil) })
}

// While Redis is down every operation fails with ErrUnavailable, soon; the
// first operations after it is back succeed, without reconnecting by hand.
func TestRedisRestarted(t *testing.T) {
	r := testenv.Redis(t, nil)
	s := open(t, r.URL, nil)
	ctx := context.Background()
	if _, err := s.Claim(ctx, "before", time.Minute); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	ops := map[string]func(context.Context) error{
		"Ping":       s.Ping,
		"AddMembers": func(ctx context.Context) error { return s.AddMembers(ctx, "k", time.Minute, "web") },
		"Members":    func(ctx context.Context) error { _, err := s.Members(ctx, "k"); return err },
		"Claim":      func(ctx context.Context) error { _, err := s.Claim(ctx, "k", time.Minute); return err },
		"Complete":   func(ctx context.Context) error { return s.Complete(ctx, "k", "t", nil, time.Minute) },
		"Hit":        func(ctx context.Context) error { _, err := s.Hit(ctx, "k", 1, time.Minute); return err },
		"Acquire":    func(ctx context.Context) error { _, err := s.Acquire(ctx, "k", 1, time.Minute); return err },
		"Release":    func(ctx context.Context) error { return s.Release(ctx, "k", "t") },
		"Lock":       func(ctx context.Context) error { _, err := s.Lock(ctx, "k", time.Minute); return err },
		"Unlock":     func(ctx context.Context) error { return s.Unlock(ctx, "k", "t") },
	}
	for name, op := range ops {
		start := time.Now()
		err := op(ctx)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s while Redis is down: %v, want ErrUnavailable", name, err)
		}
		t.Logf("%s failed after %v: %v", name, time.Since(start).Round(time.Millisecond), err)
	}
	// A deadline shorter than the client's own dial retries is kept.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	start := time.Now()
	err := s.Ping(short)
	cancel()
	if !errors.Is(err, store.ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Errorf("Ping with a 50ms deadline while down: %v after %v", err, time.Since(start))
	}

	r.Start()
	back := time.Now()
	for name, op := range ops {
		var err error
		for {
			err = op(ctx)
			if !errors.Is(err, store.ErrUnavailable) || time.Since(back) > 10*time.Second {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil && !errors.Is(err, store.ErrNotHeld) {
			t.Errorf("%s after Redis is back: %v", name, err)
		}
	}
	t.Logf("every operation succeeded %v after Redis was back", time.Since(back).Round(time.Millisecond))
	// No persistence: the restart forgot the claim (the package doc says
	// so; TestClaimsSurviveRestart is the configuration that keeps them).
	if c, err := s.Claim(ctx, "before", time.Minute); err != nil || c.State != store.Claimed {
		t.Errorf("claim after a restart without persistence = %+v %v", c, err)
	}
}

// With append-only persistence a claim, its result and a taint survive
// Redis killed and started again.
func TestClaimsSurviveRestart(t *testing.T) {
	r := testenv.Redis(t, &testenv.RedisOptions{AppendOnly: true})
	s := open(t, r.URL, nil)
	ctx := context.Background()
	pending, err := s.Claim(ctx, "pending", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done, err := s.Claim(ctx, "done", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "done", done.Token, []byte("answer"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMembers(ctx, "alice", time.Minute, "web"); err != nil {
		t.Fatal(err)
	}
	r.Kill()
	r.Start()
	var c store.Claim
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err = s.Claim(ctx, "pending", time.Minute)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // LOADING
	}
	if err != nil || c.State != store.Pending {
		t.Errorf("pending claim after a crash = %+v %v, want pending", c, err)
	}
	if err := s.Complete(ctx, "pending", pending.Token, []byte("late"), time.Minute); err != nil {
		t.Errorf("completing the claim after the restart: %v", err)
	}
	if c, err := s.Claim(ctx, "done", time.Minute); err != nil || c.State != store.Completed || string(c.Result) != "answer" {
		t.Errorf("completed claim after a crash = %+v %v", c, err)
	}
	if m, err := s.Members(ctx, "alice"); err != nil || len(m) != 1 {
		t.Errorf("taint after a crash = %q %v", m, err)
	}
}

func TestOpen(t *testing.T) {
	r := testenv.Redis(t, &testenv.RedisOptions{Password: "pa55word"})
	ctx := context.Background()
	if err := open(t, r.URL, nil).Ping(ctx); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	wrong := strings.Replace(r.URL, "pa55word", "wrong", 1)
	err := open(t, wrong, nil).Ping(ctx)
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("with a wrong password: %v, want an error that is not ErrUnavailable", err)
	}
	for _, bad := range []string{
		"http://127.0.0.1:6379",
		"redis://:pa55word@127.0.0.1:notaport/0",
		"redis://:pa55word@127.0.0.1:6379/notadb",
		"redis://:pa55word@[::1/0",
		"redis://127.0.0.1:6379/0?password=pa55word", // not an option go-redis knows
		"redis://:12345/pa55word@127.0.0.1:6379/0",   // a password with a slash, not escaped
	} {
		_, err := redisstore.Open(bad, nil)
		if err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), "pa55word") {
			t.Errorf("Open(%q): the error shows the password: %v", bad, err)
		}
	}
	// Open does not connect: a store opened while Redis is down works once
	// it is up.
	r.Stop()
	s := open(t, r.URL, nil)
	if err := s.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Ping while down: %v", err)
	}
	r.Start()
	deadline := time.Now().Add(10 * time.Second)
	for err := s.Ping(ctx); err != nil; err = s.Ping(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("Ping once up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The keys are the prefix, the kind and the caller's key; a value under
// the prefix that this package did not write is an error, never a claim
// won.
func TestKeysAndForeignValues(t *testing.T) {
	r := testenv.Redis(t, nil)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	s := redisstore.New(rdb, nil)
	if _, err := s.Claim(ctx, "conv/1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMembers(ctx, "alice", time.Minute, "web"); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, "conduit:claim:conv/1", "conduit:set:alice").Result(); err != nil || n != 2 {
		t.Fatalf("EXISTS conduit:claim:conv/1 conduit:set:alice = %d %v", n, err)
	}
	for _, key := range []string{"conduit:claim:conv/1", "conduit:set:alice"} {
		if d, err := rdb.PTTL(ctx, key).Result(); err != nil || d <= 0 || d > time.Minute {
			t.Errorf("PTTL %s = %v %v, want an expiry within a minute", key, d, err)
		}
	}
	for value, what := range map[string]string{"": "empty", "garbage": "unknown", "p": "pending", "dtoken": "completed", "d:x": "completed"} {
		rdb.Set(ctx, "conduit:claim:foreign", value, time.Minute)
		c, err := s.Claim(ctx, "foreign", time.Minute)
		if err == nil || errors.Is(err, store.ErrUnavailable) || c.State != 0 {
			t.Errorf("claim of %q = %+v %v, want a %s record's error", value, c, err, what)
		}
	}
	rdb.Set(ctx, "conduit:set:wrongtype", "x", time.Minute)
	if err := s.AddMembers(ctx, "wrongtype", time.Minute, "a"); err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("AddMembers on a string key: %v, want WRONGTYPE, not ErrUnavailable", err)
	}
	// Close leaves a client given to New open.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Ping after Close: %v", err)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Errorf("the caller's client after Close: %v", err)
	}
}

// Redis restarted under load: while it is down every error is
// ErrUnavailable, nothing else; once it is back every worker succeeds
// again.
func TestRedisRestartedUnderLoad(t *testing.T) {
	r := testenv.Redis(t, nil)
	s := open(t, r.URL, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var down bool
	var okAfter [4]int
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range okAfter {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch i % 3 {
				case 0:
					_, err = s.Hit(ctx, fmt.Sprint("w", w), 1<<40, time.Minute)
				case 1:
					_, err = s.Claim(ctx, fmt.Sprint("w", w, "-", i), time.Minute)
				case 2:
					err = s.AddMembers(ctx, fmt.Sprint("w", w), time.Minute, "web")
				}
				mu.Lock()
				if err != nil && !errors.Is(err, store.ErrUnavailable) {
					t.Errorf("worker %d: %v, want nil or ErrUnavailable", w, err)
				}
				if err == nil && !down {
					okAfter[w]++
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	down = true
	mu.Unlock()
	r.Stop()
	time.Sleep(300 * time.Millisecond)
	r.Start()
	mu.Lock()
	down = false
	okAfter = [4]int{}
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		all := okAfter[0] > 0 && okAfter[1] > 0 && okAfter[2] > 0 && okAfter[3] > 0
		mu.Unlock()
		if all || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if okAfter[0] == 0 || okAfter[1] == 0 || okAfter[2] == 0 || okAfter[3] == 0 {
		t.Errorf("successes per worker after the restart: %v, want some for each", okAfter)
	}
}

// Many goroutines through one client, hits and claims interleaved, count
// exactly (the client's connection pool is shared).
func TestOneClientConcurrent(t *testing.T) {
	r := testenv.Redis(t, nil)
	s := open(t, r.URL, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 10 {
				if _, err := s.Hit(ctx, "k", 1000, time.Minute); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if w, err := s.Hit(ctx, "k", 0, time.Minute); err != nil || w.Count != 200 {
		t.Errorf("count = %+v %v, want 200", w, err)
	}
}
