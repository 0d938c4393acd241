// Package redisstore is a store.Store shared through Redis or Valkey, on
// the client github.com/redis/go-redis/v9. With it, the replicas of
// conduit serve share taint, claims, counters and locks. So do the
// instances of a web application and the workers of one deployment.
//
// It uses plain commands and Lua scripts that Redis (5 and later) and
// Valkey both run, and no module. Every operation is one atomic step in
// the server:
//
//   - a claim is a GET and a SET PX in one script;
//   - a window is an INCR and a PEXPIRE;
//   - a key's slots are a sorted set of leases, scored by their end on the
//     server's clock (TIME);
//   - a lock is a SET NX PX, released by a compare-and-delete.
//
// Every key expires. Each operation touches one key, so the store also
// works on a Redis Cluster (through [New]).
//
// # Keys
//
// A key is Options.Prefix (default "conduit:"), then the kind (set:,
// claim:, win:, slots:, lock:), then the caller's key. The taint set of
// "principal/alice" is conduit:set:principal/alice. Two deployments that
// share one Redis give themselves different prefixes.
//
// # When Redis is down
//
// Some operations cannot reach Redis, or Redis cannot serve them yet
// (LOADING, READONLY, MASTERDOWN, TRYAGAIN, BUSY, ...). They fail with an
// error that is store.ErrUnavailable. So does one whose context's deadline
// passes first. While Redis refuses connections, an operation fails after
// one dial. Open sets one dial per attempt. After a pool's worth of failed
// dials, operations fail at once. The client reconnects by itself. go-redis
// probes a refusing server once a second. So operations succeed again
// within about a second of Redis being back. go-redis logs failed dials
// through its own logger (redis.SetLogger), to standard error by default.
//
// go-redis retries a command whose connection broke, three times by
// default. That is harmless here. A retried claim, completion, slot or
// lock recognizes its own token. Only a retried window hit may count once
// more.
//
// Redis keeps claims across its own restarts only with persistence:
// appendonly yes. Claims that must never be forgotten need appendfsync
// always too. Without it a restart forgets every claim, taint and count.
// A resumed state could then be sent again.
package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/conduitmcp/conduit/internal/redact"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/ttl"
)

// DefaultPrefix is the namespace of every key when Options.Prefix is "".
const DefaultPrefix = "conduit:"

// Options configures a Store. The zero value (or nil) is the default.
type Options struct {
	// Prefix is put before every key, so that deployments sharing one
	// Redis do not see each other's keys. Default [DefaultPrefix].
	Prefix string
}

// Store is a store.Store in Redis or Valkey. Its methods are safe for
// concurrent use.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	owned  bool // Close closes rdb
	closed atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Open returns a Store on the Redis server at rawURL:
//
//	redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]    (port 6379, DB 0 by default)
//	rediss://...                                  (the same over TLS)
//	unix://[[USER]:PASSWORD@]/PATH[?db=DB]
//
// with the query parameters that go-redis's ParseURL knows (dial_timeout,
// read_timeout, pool_size, max_retries, ...). Open does not connect. A Store
// opened while Redis is down fails its operations with store.ErrUnavailable
// until Redis is up. Errors name the URL's scheme and host. They never name
// any part of its user name or password. That holds even for one with an
// unescaped '/', '?' or '#', which is an error: escape it. An '@' is taken,
// and the last one ends the user info.
func Open(rawURL string, opts *Options) (*Store, error) {
	// Neither the URL nor url.Parse's error (which quotes it) is shown. The
	// parser cuts a password with an unescaped '/', '?' or '#', and takes
	// its start for the host. Errors name the scheme and host alone.
	where := redact.Origin(rawURL)
	if where == "" {
		return nil, errors.New("redisstore: the store's URL has no scheme (redis://, rediss:// or unix://)")
	}
	if err := checkUserinfo(rawURL); err != nil {
		return nil, fmt.Errorf("redisstore: the URL of %s: %w", where, err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisstore: the URL of %s is malformed (redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], rediss:// or unix://)", where)
	}
	ro, err := redis.ParseURL(rawURL)
	if err != nil {
		// go-redis's message may quote the URL's path or query, where a
		// password can be (a ?password=). Name only the scheme, the host and
		// the query's option names.
		var opts []string
		for k := range u.Query() {
			opts = append(opts, k)
		}
		slices.Sort(opts)
		msg := fmt.Sprintf("redisstore: %s is not a URL go-redis reads (redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], rediss:// or unix://", where)
		if len(opts) > 0 {
			msg += "; its query's options: " + strings.Join(opts, ", ") + ", of which go-redis knows dial_timeout, read_timeout, pool_size, db, ..."
		}
		return nil, errors.New(msg + ")")
	}
	ro.ContextTimeoutEnabled = true
	// One dial per attempt. go-redis dials five times by default, 100 ms
	// apart, within each of its command retries. With one, a Redis that
	// refuses connections fails an operation in a fraction of a second. So
	// callers fail closed sooner.
	ro.DialerRetries = 1
	// The handshake for maintenance notifications is for Redis's managed
	// offerings. A plain Redis or Valkey refuses it. That costs one round
	// trip per connection for nothing.
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	s := New(redis.NewClient(ro), opts)
	s.owned = true
	return s, nil
}

// checkUserinfo reports a bad user name or password in rawURL (before its
// last '@'). Bad means it has a character that a URL's user info must
// percent-escape. url.Parse would cut the value at it, or refuse it. The
// report names neither the value nor the character's place in it.
func checkUserinfo(rawURL string) error {
	_, rest, _ := strings.Cut(rawURL, "://")
	i := strings.LastIndexByte(rest, '@')
	if i < 0 {
		return nil
	}
	info := rest[:i]
	for j := 0; j < len(info); j++ {
		c := info[j]
		switch {
		// An '@' is taken, as url.Parse takes it: the last one ends the
		// user info.
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0:
		case c == '%' && j+2 < len(info) && isHex(info[j+1]) && isHex(info[j+2]):
			j += 2
		default:
			return errors.New("its user name or password holds a character to percent-escape: / ? # % as %2F %3F %23 %25, and every other but letters, digits and -._~!$&'()*+,;=:@")
		}
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// New returns a Store on a client the caller configured (a sentinel
// failover client, a cluster client, ...). Close leaves the client open:
// it is its owner's to close.
func New(rdb redis.UniversalClient, opts *Options) *Store {
	prefix := DefaultPrefix
	if opts != nil && opts.Prefix != "" {
		prefix = opts.Prefix
	}
	return &Store{rdb: rdb, prefix: prefix}
}

// The key spaces of the kinds of values.
const (
	setSpace    = "set:"
	claimSpace  = "claim:"
	windowSpace = "win:"
	slotsSpace  = "slots:"
	lockSpace   = "lock:"
)

func (s *Store) key(space, key string) []string {
	return []string{s.prefix + space + key}
}

// ms converts d to whole milliseconds for PX and PEXPIRE, at least one.
func ms(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

// fail turns a client error into the store's:
//
//   - ErrClosed;
//   - ErrUnavailable for anything that says Redis cannot be reached or cannot
//     serve now;
//   - a plain error for a reply that says the request itself is wrong.
func (s *Store) fail(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.ErrClosed):
		return store.ErrClosed
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("redisstore: %s: %w", op, err)
	case isReply(err) && !busy(err):
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	return fmt.Errorf("redisstore: %s: %w: %w", op, store.ErrUnavailable, err)
}

// isReply reports whether err is an error reply from the server, as
// opposed to a network, timeout or pool error.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// busy reports whether an error reply says the server cannot serve the
// request for now. It may be loading its data, a replica, failing over,
// running a long script, or full.
func busy(err error) bool {
	if redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsMasterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsClusterDownError(err) || redis.IsMaxClientsError(err) ||
		redis.IsNoReplicasError(err) {
		return true
	}
	return redis.HasErrorPrefix(err, "BUSY")
}

// begin fails when s is closed.
func (s *Store) begin() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// AddMembers implements store.Sets: SADD and PEXPIRE in one MULTI/EXEC.
func (s *Store) AddMembers(ctx context.Context, key string, lifetime time.Duration, members ...string) error {
	if err := ttl.Check(lifetime); err != nil {
		return err
	}
	if err := s.begin(); err != nil {
		return err
	}
	if len(members) == 0 {
		return nil
	}
	k := s.key(setSpace, key)[0]
	args := make([]any, len(members))
	for i, m := range members {
		args[i] = m
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, k, args...)
		p.PExpire(ctx, k, time.Duration(ms(lifetime))*time.Millisecond)
		return nil
	})
	return s.fail("add members", err)
}

// Members implements store.Sets.
func (s *Store) Members(ctx context.Context, key string) ([]string, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	members, err := s.rdb.SMembers(ctx, s.key(setSpace, key)[0]).Result()
	if err != nil {
		return nil, s.fail("members", err)
	}
	slices.Sort(members)
	return members, nil
}

// A claim's value is "p" TOKEN while it is pending, "d" TOKEN ":" RESULT
// once completed; tokens have no ":".
var claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
v = 'p' .. ARGV[1]
redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
return v
`)

// Claim implements store.Claims.
func (s *Store) Claim(ctx context.Context, key string, lifetime time.Duration) (store.Claim, error) {
	if err := ttl.Check(lifetime); err != nil {
		return store.Claim{}, err
	}
	if err := s.begin(); err != nil {
		return store.Claim{}, err
	}
	token := rand.Text()
	v, err := claimScript.Run(ctx, s.rdb, s.key(claimSpace, key), token, ms(lifetime)).Text()
	if err != nil {
		return store.Claim{}, s.fail("claim", err)
	}
	c, err := parseClaim(v)
	if err != nil {
		return store.Claim{}, fmt.Errorf("redisstore: claim %q: %w", key, err)
	}
	if c.State == store.Pending && c.Token == token {
		// Ours: this call set it (or a retry of this call, whose first
		// answer was lost).
		return store.Claim{State: store.Claimed, Token: token}, nil
	}
	c.Token = ""
	return c, nil
}

// parseClaim decodes a claim's value as Redis holds it. A value this package
// does not write is an error. It may be another program's key under the
// prefix, or one altered by hand. The claim is then neither won nor known to
// be done, and the caller sends nothing.
func parseClaim(v string) (store.Claim, error) {
	if v == "" {
		return store.Claim{}, errors.New("empty claim record")
	}
	switch v[0] {
	case 'p':
		token := v[1:]
		if token == "" || strings.Contains(token, ":") {
			return store.Claim{}, errors.New("malformed pending claim record")
		}
		return store.Claim{State: store.Pending, Token: token}, nil
	case 'd':
		token, result, ok := strings.Cut(v[1:], ":")
		if !ok || token == "" {
			return store.Claim{}, errors.New("malformed completed claim record")
		}
		return store.Claim{State: store.Completed, Result: []byte(result)}, nil
	}
	return store.Claim{}, errors.New("unknown claim record")
}

var completeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
local done = 'd' .. ARGV[1] .. ':' .. ARGV[2]
if v == 'p' .. ARGV[1] or v == done then
	redis.call('SET', KEYS[1], done, 'PX', ARGV[3])
	return 1
end
return 0
`)

// Complete implements store.Claims.
func (s *Store) Complete(ctx context.Context, key, token string, result []byte, lifetime time.Duration) error {
	if err := ttl.Check(lifetime); err != nil {
		return err
	}
	if err := s.begin(); err != nil {
		return err
	}
	if token == "" || strings.Contains(token, ":") {
		return store.ErrNotHeld
	}
	n, err := completeScript.Run(ctx, s.rdb, s.key(claimSpace, key), token, result, ms(lifetime)).Int()
	if err != nil {
		return s.fail("complete", err)
	}
	if n != 1 {
		return store.ErrNotHeld
	}
	return nil
}

var hitScript = redis.NewScript(`
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local ok = 0
if c < tonumber(ARGV[1]) then
	c = redis.call('INCR', KEYS[1])
	ok = 1
	if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	ttl = tonumber(ARGV[2])
end
return {c, ok, ttl}
`)

// Hit implements store.Counters: a fixed window of INCR and PEXPIRE.
func (s *Store) Hit(ctx context.Context, key string, limit int64, window time.Duration) (store.Window, error) {
	if err := ttl.Check(window); err != nil {
		return store.Window{}, err
	}
	if err := s.begin(); err != nil {
		return store.Window{}, err
	}
	r, err := hitScript.Run(ctx, s.rdb, s.key(windowSpace, key), max(limit, 0), ms(window)).Int64Slice()
	if err != nil {
		return store.Window{}, s.fail("hit", err)
	}
	if len(r) != 3 {
		return store.Window{}, fmt.Errorf("redisstore: hit: unexpected reply %v", r)
	}
	w := store.Window{Count: r[0], Allowed: r[1] == 1}
	if r[2] > 0 {
		w.Reset = time.Duration(r[2]) * time.Millisecond
	}
	return w, nil
}

// A key's slots are a sorted set of tokens. Each is scored by the end of its
// lease, in milliseconds on the server's clock. redis.replicate_commands
// lets Redis 5 and 6 write after TIME. Later versions always replicate
// effects.
var acquireScript = redis.NewScript(`
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return {n, 1} end
if n < tonumber(ARGV[1]) then
	local lease = tonumber(ARGV[3])
	redis.call('ZADD', KEYS[1], now + lease, ARGV[2])
	if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
	return {n + 1, 1}
end
return {n, 0}
`)

// Acquire implements store.Counters.
func (s *Store) Acquire(ctx context.Context, key string, limit int64, lease time.Duration) (store.Slot, error) {
	if err := ttl.Check(lease); err != nil {
		return store.Slot{}, err
	}
	if err := s.begin(); err != nil {
		return store.Slot{}, err
	}
	token := rand.Text()
	r, err := acquireScript.Run(ctx, s.rdb, s.key(slotsSpace, key), max(limit, 0), token, ms(lease)).Int64Slice()
	if err != nil {
		return store.Slot{}, s.fail("acquire", err)
	}
	if len(r) != 2 {
		return store.Slot{}, fmt.Errorf("redisstore: acquire: unexpected reply %v", r)
	}
	sl := store.Slot{InUse: r[0], Acquired: r[1] == 1}
	if sl.Acquired {
		sl.Token = token
	}
	return sl, nil
}

// Release implements store.Counters.
func (s *Store) Release(ctx context.Context, key, token string) error {
	if err := s.begin(); err != nil {
		return err
	}
	return s.fail("release", s.rdb.ZRem(ctx, s.key(slotsSpace, key)[0], token).Err())
}

// lockScript takes the lock, or reports how long it has left. A retry whose
// first answer was lost finds its own token and holds the lock.
var lockScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return {1, 0}
end
if v == ARGV[1] then return {1, 0} end
return {0, redis.call('PTTL', KEYS[1])}
`)

var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// How often Lock tries again while another owner holds the lock. It starts
// at lockPollMin and doubles up to lockPollMax, never past the lock's
// expiry.
const (
	lockPollMin = 5 * time.Millisecond
	lockPollMax = 100 * time.Millisecond
)

// Lock implements store.Locks. While another owner holds the lock it polls.
// It backs off with jitter up to 100 ms, never past the lock's expiry. An
// unreachable Redis ends the wait with store.ErrUnavailable.
func (s *Store) Lock(ctx context.Context, key string, lifetime time.Duration) (string, error) {
	if err := ttl.Check(lifetime); err != nil {
		return "", err
	}
	token := rand.Text()
	keys := s.key(lockSpace, key)
	poll := lockPollMin
	for {
		if err := s.begin(); err != nil {
			return "", err
		}
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("redisstore: waiting for lock %q: %w", key, err)
		}
		r, err := lockScript.Run(ctx, s.rdb, keys, token, ms(lifetime)).Int64Slice()
		if err != nil {
			return "", s.fail("lock", err)
		}
		if len(r) != 2 {
			return "", fmt.Errorf("redisstore: lock: unexpected reply %v", r)
		}
		if r[0] == 1 {
			return token, nil
		}
		wait := poll/2 + mrand.N(poll/2+1)
		if left := time.Duration(r[1]) * time.Millisecond; left > 0 {
			wait = min(wait, left)
		}
		poll = min(2*poll, lockPollMax)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// Unlock implements store.Locks: a compare-and-delete.
func (s *Store) Unlock(ctx context.Context, key, token string) error {
	if err := s.begin(); err != nil {
		return err
	}
	n, err := unlockScript.Run(ctx, s.rdb, s.key(lockSpace, key), token).Int()
	if err != nil {
		return s.fail("unlock", err)
	}
	if n != 1 {
		return store.ErrNotHeld
	}
	return nil
}

// Ping implements store.Store with Redis's PING.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.begin(); err != nil {
		return err
	}
	return s.fail("ping", s.rdb.Ping(ctx).Err())
}

// Close implements store.Store: it closes the client that Open made (not
// one given to New).
func (s *Store) Close() error {
	if s.closed.Swap(true) || !s.owned {
		return nil
	}
	return s.rdb.Close()
}
