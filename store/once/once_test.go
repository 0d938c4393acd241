package once_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9/logging"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/once/oncetest"
	"github.com/conduitmcp/conduit/store/redisstore"
)

// claimerEnv makes the test binary a claimer process (see TestMain): it
// opens the Redis store at the variable's URL, under the prefix
// CLAIMER_PREFIX, and runs oncetest.ClaimAndWait for CLAIMER_KEY and
// CLAIMER_TTL.
const claimerEnv = "ONCE_TEST_CLAIMER"

func TestMain(m *testing.M) {
	logging.Disable()
	if url := os.Getenv(claimerEnv); url != "" {
		os.Exit(claimer(url))
	}
	os.Exit(m.Run())
}

func claimer(url string) int {
	s, err := redisstore.Open(url, &redisstore.Options{Prefix: os.Getenv("CLAIMER_PREFIX")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	ttl, err := time.ParseDuration(os.Getenv("CLAIMER_TTL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := oncetest.ClaimAndWait(ctx, s, os.Getenv("CLAIMER_KEY"), ttl); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestMemory(t *testing.T) {
	var mu sync.Mutex
	stores := map[string]*store.Memory{}
	oncetest.Run(t, func(t *testing.T, namespace string) store.Claims {
		mu.Lock()
		defer mu.Unlock()
		s := stores[namespace]
		if s == nil {
			s = store.NewMemory()
			stores[namespace] = s
			t.Cleanup(func() { s.Close() })
		}
		return s
	}, nil)
}

func TestRedis(t *testing.T) {
	r := testenv.Redis(t, nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	oncetest.Run(t, func(t *testing.T, namespace string) store.Claims {
		s, err := redisstore.Open(r.URL, &redisstore.Options{Prefix: namespace})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, &oncetest.Options{
		Claimer: func(t *testing.T, namespace, key string, ttl time.Duration) *exec.Cmd {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), claimerEnv+"="+r.URL, "CLAIMER_PREFIX="+namespace, "CLAIMER_KEY="+key, "CLAIMER_TTL="+ttl.String())
			return cmd
		},
	})
}
