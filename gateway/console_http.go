// The console's HTTP side: sign-in, pages, decisions and live updates.

package gateway

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/conduitmcp/conduit/internal/redact"
	"github.com/conduitmcp/conduit/internal/seal"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// ConsolePath is where ListenAndServe serves the console, with
// Options.Console set.
const ConsolePath = "/console/"

//go:embed console
var consoleFiles embed.FS

var consoleTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"age":  func(d time.Duration) string { return d.Truncate(time.Second).String() },
	"when": func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"left": func(t time.Time) string { return time.Until(t).Truncate(time.Minute).String() },
}).ParseFS(consoleFiles, "console/*.html"))

// Cookie and lifetimes of the console's sign-in.
const (
	consoleCookie  = "conduit_console"
	consoleSession = 12 * time.Hour
)

// consoleCSP allows the console's own script, style and images only. It
// allows no inline script and no frames. Forms post to the console alone.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// consoleHandler is the console behind the gateway's guard. A request
// signed in by the console's cookie carries its token as a bearer token.
// That token is checked as every request's is.
func (g *Gateway) consoleHandler(o HTTPOptions, guard func(http.Handler) http.Handler) (http.Handler, error) {
	c := g.console
	cookies, err := seal.New("conduit console session", g.stateKeys...)
	if err != nil {
		return nil, err
	}
	csrf, err := seal.New("conduit console csrf", g.stateKeys...)
	if err != nil {
		return nil, err
	}
	var secrets []redact.Secret
	for tok := range o.Tokens {
		secrets = append(secrets, redact.Secret{Value: tok, With: "[token]"})
	}
	for _, s := range c.o.Secrets {
		secrets = append(secrets, redact.Secret{Value: s, With: "[secret]"})
	}
	cs := &consoleServer{g: g, c: c, csrf: csrf, secrets: secrets}
	inner := guard(http.HandlerFunc(cs.serveAdmin))
	static, _ := fs.Sub(consoleFiles, "console")
	files := http.StripPrefix(ConsolePath+"static/", http.FileServerFS(static))
	// Checks the token a sign-in offers: the guard's answer to it.
	check := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			w.Header().Set("X-Principal", ti.UserID)
		}
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		if !allowedHost(r.Host, o.Hosts) {
			http.Error(w, "Forbidden: the Host header names no host this gateway serves", http.StatusForbidden)
			return
		}
		switch p := r.URL.Path; {
		case p == ConsolePath+"static/console.css" || p == ConsolePath+"static/console.js":
			files.ServeHTTP(w, r)
			return
		case p == ConsolePath+"signin":
			cs.serveSignIn(w, r, cookies, check)
			return
		}
		if r.Header.Get("Authorization") == "" {
			if ck, err := r.Cookie(consoleCookie); err == nil {
				if tok, err := cookies.Open(ck.Value, time.Now()); err == nil {
					r = r.Clone(r.Context())
					r.Header.Set("Authorization", "Bearer "+string(tok))
				}
			}
		}
		if r.Header.Get("Authorization") == "" {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") {
				http.Redirect(w, r, ConsolePath+"signin", http.StatusSeeOther)
				return
			}
			http.Error(w, "Unauthorized: sign in to the console", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}), nil
}

func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// "no-referrer" would make a form's Origin "null", which the guard refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// consoleServer serves the console's pages to admins.
type consoleServer struct {
	g       *Gateway
	c       *console
	csrf    *seal.Sealer
	secrets []redact.Secret
}

// page is what every template gets.
type page struct {
	Title, Nav string
	Admin      string
	CSRF       string
	Flash      string
	Error      string
	Partial    bool
	Data       any
}

func (cs *consoleServer) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.Partial = r.URL.Query().Get("partial") == "1"
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := consoleTemplates.ExecuteTemplate(w, name, p); err != nil {
		cs.g.logger.Warn("gateway: a console page failed", "page", name, "err", err)
	}
}

func (cs *consoleServer) clean(s string) string { return redact.String(s, cs.secrets...) }

// serveSignIn shows the sign-in form. On POST it checks the token as the
// guard does. It keeps the token, sealed, in a cookie for the console's
// paths.
func (cs *consoleServer) serveSignIn(w http.ResponseWriter, r *http.Request, cookies *seal.Sealer, check http.Handler) {
	p := page{Title: "Sign in", Nav: "signin"}
	if r.Method == http.MethodPost {
		if !sameOrigin(r) {
			http.Error(w, "Forbidden: a cross-site form", http.StatusForbidden)
			return
		}
		tok := strings.TrimSpace(r.PostFormValue("token"))
		probe, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, ConsolePath, nil)
		probe.Host, probe.RemoteAddr = r.Host, r.RemoteAddr
		probe.Header.Set("Authorization", "Bearer "+tok)
		rec := &recorder{h: http.Header{}}
		check.ServeHTTP(rec, probe)
		principal := rec.h.Get("X-Principal")
		switch {
		case tok == "" || rec.code >= 400 || principal == "":
			p.Error = "That token is not accepted."
		case !cs.c.admins[principal]:
			p.Error = "That principal is not an admin of this console."
			cs.c.audit(r.Context(), AuditRecord{Kind: "console", Principal: principal, Decision: "sign-in refused"})
		default:
			http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: cookies.Seal([]byte(tok), time.Now().Add(consoleSession)),
				Path: ConsolePath, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: int(consoleSession.Seconds())})
			cs.c.audit(r.Context(), AuditRecord{Kind: "console", Principal: principal, Decision: "sign-in"})
			http.Redirect(w, r, ConsolePath, http.StatusSeeOther)
			return
		}
		cs.render(w, r, http.StatusUnauthorized, "signin.html", p)
		return
	}
	cs.render(w, r, http.StatusOK, "signin.html", p)
}

// recorder keeps what a handler answered, for the sign-in's check.
type recorder struct {
	h    http.Header
	code int
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return len(p), nil
}
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

// sameOrigin reports whether a browser's request comes from the
// console's own origin. A request that says nothing of where it comes
// from passes too, as from a client that is not a browser.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" && r.Header.Get("Sec-Fetch-Site") == "" {
		return origin == ""
	}
	return strings.TrimPrefix(strings.TrimPrefix(origin, "http://"), "https://") == r.Host
}

// serveAdmin serves an authenticated caller: admins only.
func (cs *consoleServer) serveAdmin(w http.ResponseWriter, r *http.Request) {
	var principal string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		principal = ti.UserID
	}
	if principal == "" || !cs.c.admins[principal] {
		cs.render(w, r, http.StatusForbidden, "denied.html", page{Title: "Not an admin", Nav: "denied"})
		return
	}
	p := page{Admin: principal, CSRF: cs.csrf.Seal([]byte(principal), time.Now().Add(consoleSession))}
	if r.Method == http.MethodPost {
		if !sameOrigin(r) || !cs.checkCSRF(r, principal) {
			http.Error(w, "Forbidden: the form's CSRF token is missing or not this admin's", http.StatusForbidden)
			return
		}
	}
	rest := strings.TrimPrefix(r.URL.Path, ConsolePath)
	switch {
	case rest == "" && r.Method == http.MethodGet:
		cs.serveApprovals(w, r, p)
	case rest == "audit" && r.Method == http.MethodGet:
		cs.serveAudit(w, r, p)
	case rest == "now" && r.Method == http.MethodGet:
		cs.serveNow(w, r, p)
	case rest == "events" && r.Method == http.MethodGet:
		cs.serveEvents(w, r)
	case strings.HasPrefix(rest, "approvals/") && r.Method == http.MethodPost:
		cs.serveDecide(w, r, p, strings.TrimPrefix(rest, "approvals/"))
	case strings.HasPrefix(rest, "patterns/") && r.Method == http.MethodPost:
		cs.serveRevoke(w, r, p, strings.TrimPrefix(rest, "patterns/"))
	case rest == "signout" && r.Method == http.MethodPost:
		http.SetCookie(w, &http.Cookie{Name: consoleCookie, Path: ConsolePath, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		cs.c.audit(r.Context(), AuditRecord{Kind: "console", Principal: principal, Decision: "sign-out"})
		http.Redirect(w, r, ConsolePath+"signin", http.StatusSeeOther)
	default:
		http.Error(w, "Not found", http.StatusNotFound)
	}
}

func (cs *consoleServer) checkCSRF(r *http.Request, principal string) bool {
	got, err := cs.csrf.Open(r.PostFormValue("csrf"), time.Now())
	return err == nil && string(got) == principal
}

// approvalView is a pending approval as the inbox shows it.
type approvalView struct {
	ID, Principal, Server, Tool, Method, Args, Rule string
	Age                                             time.Duration
	Until                                           time.Time
}

func (cs *consoleServer) serveApprovals(w http.ResponseWriter, r *http.Request, p page) {
	p.Title, p.Nav = "Approvals", "approvals"
	p.Flash = r.URL.Query().Get("flash")
	waiting, _, err := cs.c.readApprovals(r.Context())
	pats, perr := cs.c.patterns(r.Context())
	if err != nil || perr != nil {
		p.Error = "The shared store is unavailable: what waits cannot be read."
	}
	var views []approvalView
	for _, a := range waiting {
		views = append(views, approvalView{ID: a.ID, Principal: a.Principal, Server: a.Server, Tool: a.Tool, Method: a.Method,
			Args: cs.clean(a.Args), Rule: a.Rule, Age: a.Age, Until: a.Until})
	}
	p.Data = struct {
		Approvals []approvalView
		Patterns  []patternRecord
		Auto      bool
	}{views, pats, cs.c.o.Approvals}
	cs.render(w, r, http.StatusOK, "approvals.html", p)
}

// patternDurations are the choices a decision offers for a pattern.
var patternDurations = map[string]time.Duration{"15m": 15 * time.Minute, "1h": time.Hour, "8h": 8 * time.Hour, "24h": 24 * time.Hour}

func (cs *consoleServer) serveDecide(w http.ResponseWriter, r *http.Request, p page, id string) {
	ctx := r.Context()
	action, reason := r.PostFormValue("action"), strings.TrimSpace(r.PostFormValue("reason"))
	if action != "approve" && action != "deny" {
		http.Error(w, "action is approve or deny", http.StatusBadRequest)
		return
	}
	if len(reason) > 500 {
		reason = reason[:500]
	}
	waiting, _, err := cs.c.readApprovals(ctx)
	if err != nil {
		http.Error(w, "the shared store is unavailable", http.StatusServiceUnavailable)
		return
	}
	i := slices.IndexFunc(waiting, func(a pending) bool { return a.ID == id })
	if i < 0 {
		http.Redirect(w, r, ConsolePath+"?flash="+urlQuery("That approval is no longer waiting: it was decided, or its time ran out."), http.StatusSeeOther)
		return
	}
	a := waiting[i]
	won, err := cs.c.decide(ctx, approvalRecord{Kind: "decided", ID: id, Decision: action, Reason: reason, By: p.Admin})
	switch {
	case err != nil:
		http.Error(w, "the shared store is unavailable: nothing was decided", http.StatusServiceUnavailable)
		return
	case !won:
		http.Redirect(w, r, ConsolePath+"?flash="+urlQuery("Another admin decided it first."), http.StatusSeeOther)
		return
	}
	rec := AuditRecord{Kind: "console", Principal: p.Admin, Server: a.Server, Tool: a.Tool, Decision: action, Detail: "approval " + id + " of " + a.Principal}
	if reason != "" {
		rec.Detail += ": " + cs.clean(reason)
	}
	cs.c.audit(ctx, rec)
	flash := fmt.Sprintf("%s: %s/%s for %s.", map[string]string{"approve": "Approved", "deny": "Denied"}[action], a.Server, a.Tool, a.Principal)
	if d, ok := patternDurations[r.PostFormValue("for")]; ok && action == "approve" {
		pat := patternRecord{Kind: "allow", ID: newID(), Principal: a.Principal, Server: a.Server, Tool: a.Tool, Until: time.Now().Add(d), By: p.Admin, At: time.Now()}
		if err := cs.c.appendJSON(ctx, patternsJournal, pat, MaxPatternDecision+time.Hour); err == nil {
			cs.c.audit(ctx, AuditRecord{Kind: "console", Principal: p.Admin, Server: a.Server, Tool: a.Tool, Decision: "allow pattern",
				Detail: fmt.Sprintf("pattern %s: %s's calls for %v", pat.ID, a.Principal, d)})
			flash += fmt.Sprintf(" Allowed for %v.", d)
		}
	}
	http.Redirect(w, r, ConsolePath+"?flash="+urlQuery(flash), http.StatusSeeOther)
}

func (cs *consoleServer) serveRevoke(w http.ResponseWriter, r *http.Request, p page, rest string) {
	id, ok := strings.CutSuffix(rest, "/revoke")
	if !ok || id == "" {
		http.Error(w, "Not found", http.StatusNotFound)
		return
	}
	ctx := r.Context()
	if err := cs.c.appendJSON(ctx, patternsJournal, patternRecord{Kind: "revoke", ID: id, By: p.Admin, At: time.Now()}, MaxPatternDecision+time.Hour); err != nil {
		http.Error(w, "the shared store is unavailable: nothing was revoked", http.StatusServiceUnavailable)
		return
	}
	cs.c.notify()
	cs.c.audit(ctx, AuditRecord{Kind: "console", Principal: p.Admin, Decision: "revoke pattern", Detail: "pattern " + id})
	http.Redirect(w, r, ConsolePath+"?flash="+urlQuery("Revoked."), http.StatusSeeOther)
}

func urlQuery(s string) string { return template.URLQueryEscaper(s) }

// auditFilter is the audit page's search.
type auditFilter struct {
	Principal, Tool, Decision, Since string
}

func (cs *consoleServer) serveAudit(w http.ResponseWriter, r *http.Request, p page) {
	p.Title, p.Nav = "Audit trail", "audit"
	q := r.URL.Query()
	f := auditFilter{Principal: q.Get("principal"), Tool: q.Get("tool"), Decision: q.Get("decision"), Since: q.Get("since")}
	since := 24 * time.Hour
	if f.Since != "" {
		if d, err := time.ParseDuration(f.Since); err == nil && d > 0 {
			since = d
		} else {
			p.Error = fmt.Sprintf("%q is not a duration (such as 1h or 30m): the last 24h are shown.", f.Since)
		}
	}
	recs, err := ReadAudit(r.Context(), cs.c.journals, time.Now().Add(-since), 5000)
	if err != nil {
		p.Error = "The shared store is unavailable: the audit trail cannot be read."
	}
	var shown []AuditRecord
	for _, rec := range slices.Backward(recs) {
		switch {
		case f.Principal != "" && rec.Principal != f.Principal,
			f.Tool != "" && !strings.Contains(rec.Server+"/"+rec.Tool, f.Tool),
			f.Decision != "" && rec.Decision != f.Decision && rec.Outcome != f.Decision:
			continue
		}
		rec.Detail = cs.clean(rec.Detail)
		shown = append(shown, rec)
		if len(shown) == 500 {
			break
		}
	}
	p.Data = struct {
		Filter  auditFilter
		Records []AuditRecord
	}{f, shown}
	cs.render(w, r, http.StatusOK, "audit.html", p)
}

// principalView is a principal on the "Now" page.
type principalView struct {
	Name   string
	Usage  []LimitUsage
	Taint  []string
	Recent int
	Err    string
}

func (cs *consoleServer) serveNow(w http.ResponseWriter, r *http.Request, p page) {
	p.Title, p.Nav = "Now", "now"
	ctx := r.Context()
	var servers []serverDoc
	for _, st := range cs.g.src.Status() {
		servers = append(servers, serverDoc{ID: st.ID, State: st.State.String()})
	}
	names := slices.Clone(cs.c.o.Principals)
	recent := map[string]int{}
	var drift []AuditRecord
	recs, err := ReadAudit(ctx, cs.c.journals, time.Now().Add(-24*time.Hour), 5000)
	if err != nil {
		p.Error = "The shared store is unavailable: counts and taint cannot be read."
	}
	for _, rec := range recs {
		switch rec.Kind {
		case "call":
			recent[rec.Principal]++
			if !slices.Contains(names, rec.Principal) {
				names = append(names, rec.Principal)
			}
		case "drift":
			rec.Detail = cs.clean(rec.Detail)
			drift = append(drift, rec)
		}
	}
	slices.Sort(names)
	var principals []principalView
	for _, n := range names {
		pv := principalView{Name: n, Recent: recent[n]}
		var err error
		if pv.Usage, err = cs.g.Usage(ctx, n); err != nil {
			pv.Err = "the counts cannot be read"
		}
		if pv.Taint, err = cs.g.taints.of(ctx, n, ""); err != nil {
			pv.Err = "the taint cannot be read"
		}
		principals = append(principals, pv)
	}
	p.Data = struct {
		Servers    []serverDoc
		Principals []principalView
		Pinned     []string
		Drift      []AuditRecord
		Store      string
	}{servers, principals, cs.c.o.Pinned, drift, cs.g.storeState(ctx)}
	cs.render(w, r, http.StatusOK, "now.html", p)
}

// serveEvents streams "changed" whenever what the console shows may have
// changed. It streams at once for this replica's changes. For another
// replica's it streams within a second, comparing the journals' newest
// records.
func (cs *consoleServer) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// A change between the page's rendering and this stream's start
	// would be missed: the page refreshes once at once.
	fmt.Fprint(w, ": conduit console\n\nevent: changed\ndata: 1\n\n")
	fl.Flush()
	last := cs.version(r.Context())
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	beat := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-cs.g.ctx.Done():
			return
		case <-cs.c.changes():
		case <-tick.C:
		}
		if cs.g.draining.Load() {
			return
		}
		v := cs.version(r.Context())
		switch {
		case v != last:
			last = v
			fmt.Fprint(w, "event: changed\ndata: 1\n\n")
		case time.Since(beat) > 15*time.Second:
			fmt.Fprint(w, ": ping\n\n")
		default:
			continue
		}
		beat = time.Now()
		fl.Flush()
	}
}

// version names the newest record of each journal the console shows,
// with the second. So an approval's age moves on.
func (cs *consoleServer) version(ctx context.Context) string {
	var b strings.Builder
	for _, k := range []string{approvalsJournal, patternsJournal, AuditJournal} {
		es, err := cs.c.journals.Read(ctx, k, time.Now().Add(-cs.c.approvalsKeep()), 1)
		if err == nil && len(es) > 0 {
			b.WriteString(es[0].ID)
		}
		b.WriteByte('/')
	}
	return b.String()
}
