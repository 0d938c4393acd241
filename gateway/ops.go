package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// What a load balancer and an operator ask of one replica:
//
//   - whether it is alive and ready for requests;
//   - what a caller has used of the limits;
//   - a shutdown that loses no request it took.

// DefaultShutdownTimeout bounds a graceful shutdown when
// HTTPOptions.ShutdownTimeout is zero.
const DefaultShutdownTimeout = 30 * time.Second

// The paths of ListenAndServe's endpoints besides /mcp.
const (
	// HealthPath answers 200 while the process serves: it is alive.
	HealthPath = "/healthz"
	// ReadyPath answers 200 while the gateway takes requests (see
	// [Gateway.Ready]). Otherwise it answers 503, with a JSON body that
	// says why.
	ReadyPath = "/readyz"
	// StatusPath answers a caller authenticated as for /mcp. It answers a
	// JSON document of the gateway's state and of the caller's own use of
	// the limits (see [Gateway.Usage]).
	StatusPath = "/status"
)

// Errors of [Gateway.Ready].
var (
	// ErrDraining: the gateway is shutting down.
	ErrDraining = errors.New("gateway: shutting down")
	// ErrNoServerUp: no server is up (they are connecting, down, or need
	// a login).
	ErrNoServerUp = errors.New("gateway: no server is up")
)

// Ready reports whether the gateway is to be sent requests. It returns
// one of these:
//
//   - nil;
//   - [ErrDraining] once ListenAndServe's context has ended;
//   - [ErrNoServerUp] while none of its servers is up. A server of
//     identity principal counts as up: its sessions open per principal.
//
// The store is not part of it. A shared store that is unavailable is
// unavailable to every replica. Taking them all out of the balancer would
// answer every client with the balancer's own error. Instead each replica
// lists, and refuses calls with an error that says the store is
// unavailable. ListenAndServe's ReadyPath reports the store's state
// apart.
func (g *Gateway) Ready(context.Context) error {
	if g.draining.Load() {
		return ErrDraining
	}
	for _, st := range g.src.Status() {
		if st.State == conduit.StateUp || st.State == conduit.StatePerPrincipal {
			return nil
		}
	}
	return ErrNoServerUp
}

// storeState is the store's state as the endpoints report it.
func (g *Gateway) storeState(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := g.store.Ping(ctx); err != nil {
		return "unavailable"
	}
	return "ok"
}

func serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

func (g *Gateway) serveReady(w http.ResponseWriter, r *http.Request) {
	doc := struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason,omitempty"`
		Store  string `json:"store"`
	}{Ready: true, Store: g.storeState(r.Context())}
	code := http.StatusOK
	if err := g.Ready(r.Context()); err != nil {
		doc.Ready, doc.Reason, code = false, err.Error(), http.StatusServiceUnavailable
	}
	writeJSON(w, code, doc)
}

// statusDoc is what StatusPath answers. It holds nothing of another
// principal's, and no secret. So server errors, which may quote a
// server's answers, are left out.
type statusDoc struct {
	Principal string      `json:"principal"`
	Ready     bool        `json:"ready"`
	Reason    string      `json:"reason,omitempty"`
	Store     string      `json:"store"`
	Servers   []serverDoc `json:"servers"`
	Limits    []limitDoc  `json:"limits,omitempty"`
	LimitsErr string      `json:"limitsError,omitempty"`
	Time      time.Time   `json:"time"`
}

type serverDoc struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

type limitDoc struct {
	Tools       []string `json:"tools"`
	PerMinute   int      `json:"perMinute,omitempty"`
	Calls       int      `json:"calls"`
	WindowEndMs int64    `json:"windowEndsInMs,omitempty"`
	AtOnce      int      `json:"atOnce,omitempty"`
	InFlight    int      `json:"inFlight"`
}

// serveStatus answers StatusPath for the caller's principal.
func (g *Gateway) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	var principal string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		principal = ti.UserID
	}
	doc := statusDoc{Principal: principal, Ready: true, Store: g.storeState(r.Context()), Time: time.Now().UTC()}
	if err := g.Ready(r.Context()); err != nil {
		doc.Ready, doc.Reason = false, err.Error()
	}
	for _, st := range g.src.Status() {
		doc.Servers = append(doc.Servers, serverDoc{ID: st.ID, State: st.State.String()})
	}
	usage, err := g.Usage(r.Context(), principal)
	if err != nil {
		doc.LimitsErr = "the counts cannot be read: the shared store is unavailable"
	}
	for _, u := range usage {
		doc.Limits = append(doc.Limits, limitDoc{Tools: u.Tools, PerMinute: u.PerMinute, Calls: u.Calls,
			WindowEndMs: u.WindowEnds.Milliseconds(), AtOnce: u.AtOnce, InFlight: u.InFlight})
	}
	writeJSON(w, http.StatusOK, doc)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// flight counts the requests in flight on an endpoint, for a shutdown to
// wait for them. A GET is a stream of events, which ends only when its
// session does. So it is not counted.
type flight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero, while someone waits
}

// track counts the requests h serves.
func (f *flight) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.n--
			if f.n == 0 && f.idle != nil {
				close(f.idle)
				f.idle = nil
			}
			f.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// wait waits until no request is in flight, or ctx ends.
func (f *flight) wait(ctx context.Context) error {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return nil
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
