package conduit

// The cache hints of protocol 2026-07-28. A server says of each list
// result how long it stays fresh (ttlMs). It also says whether it is the
// same for every caller (cacheScope "public") or for its requester only
// ("private").
//
// conduit's list caches are a session's tool list, and its prompts and
// resources. They keep a list while its hint lasts. They also keep it
// until the server says it changed. A private list is kept for the
// principal it was listed for (ListOptions.Principal). It is listed again
// for any other. Sessions of earlier protocols have no hints. Their lists
// are kept until the server says they changed.
//
// The hints govern listings (ListTools, ListToolsFor, ListPromptsFor, and
// so on). A request made without a tool set resolves its name against the
// list cached for the session, whatever its hint (listFor.resolve).
//
// The hints reach conduit through hintMiddleware. It sees every list
// result the SDK receives. The SDK's session keeps a list result of its
// own while its hint lasts. It does so per session, that is per
// authorization context. A listing it answers from there goes unseen.
// That keeps the hint conduit has.

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hintedProtocol is the first protocol version whose list results carry
// cache hints.
const hintedProtocol = "2026-07-28"

// maxHint bounds how long a list is kept on its hint's word.
const maxHint = 24 * time.Hour

// listHint is what a server said of a cached list's freshness.
type listHint struct {
	hinted  bool      // the session speaks hintedProtocol: the hint applies
	expires time.Time // fresh before then
	private bool      // cacheScope "private": for owner only
	owner   string    // the principal the list was listed for
}

// listFor is whom a listing is for. principal is whom a private list is
// kept for. resolve is set when it only resolves a request's name (a
// call, a prompt, a resource). A list cached for the session does that,
// whatever its hint. The server itself refuses what it no longer offers.
// Asking for its lists before every request would double its traffic.
type listFor struct {
	principal string
	resolve   bool
}

// fresh reports whether the list may be given for lf at now.
func (h listHint) fresh(lf listFor, now time.Time) bool {
	if !h.hinted || lf.resolve {
		return true
	}
	if h.private && h.owner != lf.principal {
		return false
	}
	return now.Before(h.expires)
}

// hintRecorder gathers the hints of the pages of one listing.
type hintRecorder struct {
	mu   sync.Mutex
	seen bool
	ttl  time.Duration // the shortest of the pages'
	priv bool          // one private page makes the list private
}

type hintKey struct{}

// withHints returns ctx, whose list requests record their hints in the
// recorder returned.
func withHints(ctx context.Context) (context.Context, *hintRecorder) {
	r := &hintRecorder{}
	return context.WithValue(ctx, hintKey{}, r), r
}

// hintMiddleware records the cache hints of the list results a request
// whose context has a recorder receives.
func hintMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		r, _ := ctx.Value(hintKey{}).(*hintRecorder)
		c, ok := res.(mcp.CacheableResult)
		if r == nil || !ok {
			return res, err
		}
		// A negative ttlMs is no promise of freshness; a day is the most
		// conduit keeps a list on a hint's word (and no ttlMs overflows).
		ttl := time.Duration(min(max(c.GetTTLMs(), 0), int(maxHint/time.Millisecond))) * time.Millisecond
		r.mu.Lock()
		if !r.seen || ttl < r.ttl {
			r.ttl = ttl
		}
		r.seen = true
		// "public" is the default; anything else is treated as private.
		r.priv = r.priv || (c.GetCacheScope() != "" && c.GetCacheScope() != "public")
		r.mu.Unlock()
		return res, err
	}
}

// hint is the hint of a listing on sess for principal, received at
// start. prev is the one the cache had. A listing the SDK answered from
// its own cache keeps prev's expiry.
func (r *hintRecorder) hint(sess *mcp.ClientSession, principal string, start time.Time, prev listHint) listHint {
	ir := sess.InitializeResult()
	if ir == nil || ir.ProtocolVersion < hintedProtocol {
		return listHint{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen {
		if !prev.hinted {
			return listHint{hinted: true, expires: start, owner: principal}
		}
		prev.owner = principal
		return prev
	}
	return listHint{hinted: true, expires: start.Add(r.ttl), private: r.priv, owner: principal}
}

// sameTools reports whether two listings hold the same definitions.
func sameTools(a, b []*mcp.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && bytes.Equal(ja, jb)
}
