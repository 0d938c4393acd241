package once_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9/logging"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/claimer"
	"github.com/conduitmcp/conduit/store/once/oncetest"
	"github.com/conduitmcp/conduit/store/redisstore"
	"github.com/conduitmcp/conduit/store/sqlitestore"
)

// claimerEnv makes the test binary a claimer process (see TestMain): it
// opens the Redis store at the variable's URL, under the prefix
// CLAIMER_PREFIX, and runs oncetest.ClaimAndWait for CLAIMER_KEY and
// CLAIMER_TTL.
const claimerEnv = "ONCE_TEST_CLAIMER"

// sqliteClaimerEnv makes it a claimer on the SQLite file it names.
const sqliteClaimerEnv = "ONCE_TEST_SQLITE_CLAIMER"

func TestMain(m *testing.M) {
	logging.Disable()
	claimer.Main(claimerEnv, func(url string) error {
		s, err := redisstore.Open(url, &redisstore.Options{Prefix: os.Getenv("CLAIMER_PREFIX")})
		if err != nil {
			return err
		}
		defer s.Close()
		return claimAndWait(s)
	})
	claimer.Main(sqliteClaimerEnv, func(path string) error {
		s, err := sqlitestore.Open(path, nil)
		if err != nil {
			return err
		}
		defer s.Close()
		return claimAndWait(s)
	})
	os.Exit(m.Run())
}

// claimAndWait runs oncetest.ClaimAndWait on s for the key and ttl the
// environment names.
func claimAndWait(s store.Claims) error {
	ttl, err := time.ParseDuration(os.Getenv("CLAIMER_TTL"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return oncetest.ClaimAndWait(ctx, s, os.Getenv("CLAIMER_KEY"), ttl)
}

// claimerAt is the claimer command for the store that at locates, as an
// environment entry, for a namespace.
func claimerAt(at func(namespace string) string) func(t *testing.T, namespace, key string, ttl time.Duration) *exec.Cmd {
	return func(t *testing.T, namespace, key string, ttl time.Duration) *exec.Cmd {
		return claimer.Command(t, at(namespace), "CLAIMER_PREFIX="+namespace, "CLAIMER_KEY="+key, "CLAIMER_TTL="+ttl.String())
	}
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
	oncetest.Run(t, func(t *testing.T, namespace string) store.Claims {
		s, err := redisstore.Open(r.URL, &redisstore.Options{Prefix: namespace})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, &oncetest.Options{
		Claimer: claimerAt(func(string) string { return claimerEnv + "=" + r.URL }),
	})
}

// TestSQLite runs the protocol over the embedded store, a file per
// namespace that the claimer processes open too.
func TestSQLite(t *testing.T) {
	dir := t.TempDir()
	path := func(namespace string) string {
		return filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(namespace)+".db")
	}
	var mu sync.Mutex
	stores := map[string]*sqlitestore.Store{}
	oncetest.Run(t, func(t *testing.T, namespace string) store.Claims {
		mu.Lock()
		defer mu.Unlock()
		s := stores[namespace]
		if s == nil {
			var err error
			if s, err = sqlitestore.Open(path(namespace), nil); err != nil {
				t.Fatal(err)
			}
			stores[namespace] = s
			t.Cleanup(func() { s.Close() })
		}
		return s
	}, &oncetest.Options{
		Claimer: claimerAt(func(namespace string) string { return sqliteClaimerEnv + "=" + path(namespace) }),
	})
}
