package soak_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
)

// The hostile responses the injector feeds through the adapters.
var hostileKinds = []string{
	"malformed JSON",
	"unknown tool names",
	"wrong argument types",
	"arguments not an object",
	"deep nesting",
	"huge arguments",
	"thousands of calls",
	"duplicate call ids",
}

// event is one planned fault, injected once the callers have written at
// calls.
type event struct {
	at      int64
	kind    string // kill, stall, hostile
	hostile string
}

// plan spreads the faults over the run, from 5% to 85% of the budget, in
// a random order.
func (s *soak) plan(rng *rand.Rand) []event {
	kills := *flagKills
	if kills <= 0 {
		kills = max(3, int(s.budget/2500))
	}
	stalls := *flagStalls
	if stalls <= 0 {
		stalls = max(1, int(s.budget/10000))
	}
	hostile := *flagHostile
	if hostile <= 0 {
		hostile = max(2*len(hostileKinds), int(s.budget/250))
	}
	var evs []event
	for range kills {
		evs = append(evs, event{kind: "kill"})
	}
	for range stalls {
		evs = append(evs, event{kind: "stall"})
	}
	for i := range hostile {
		evs = append(evs, event{kind: "hostile", hostile: hostileKinds[i%len(hostileKinds)]})
	}
	rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	for i := range evs {
		evs[i].at = s.budget/20 + s.budget*8/10*int64(i)/int64(len(evs))
	}
	return evs
}

// inject runs the plan, then waits for the faults still under way.
func (s *soak) inject(ctx context.Context, plan []event, rng *rand.Rand) {
	var wg sync.WaitGroup
	var stallMu sync.Mutex // one stall at a time
	defer func() { wg.Wait(); close(s.injDone) }()
	for _, ev := range plan {
		for s.issued.Load() < ev.at {
			select {
			case <-s.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		switch ev.kind {
		case "kill":
			s.kill(rng)
		case "stall":
			// The stall's generator is drawn here: rng is this loop's
			// alone, and the goroutine may start after the next event.
			r := rand.New(rand.NewPCG(rng.Uint64(), 0))
			wg.Go(func() {
				stallMu.Lock()
				defer stallMu.Unlock()
				s.stall(r)
			})
			time.Sleep(10 * time.Millisecond) // let it pick its victim before a kill does
		case "hostile":
			r := rand.New(rand.NewPCG(rng.Uint64(), 1))
			wg.Go(func() { s.hostileTurn(ctx, ev.hostile, r) })
		}
	}
}

// victim picks a running server process of the hub's, other than the
// stalled one, waiting for one while all are being restarted.
func (s *soak) victim(rng *rand.Rand) (proc, bool) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var live []proc
		for _, p := range children() {
			// A process whose recorder has logged what it read is past
			// node's start: the hub is speaking to it.
			if p.server != "" && p.state != 'Z' && p.state != 'T' && int64(p.pid) != s.stalled.Load() && s.talking(p) {
				live = append(live, p)
			}
		}
		if len(live) > 0 {
			return live[rng.IntN(len(live))], true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return proc{}, false
}

// allUp reports whether every server is up, or is the stalled one.
func (s *soak) allUp() bool {
	stalled := ""
	if pid := s.stalled.Load(); pid != 0 {
		if p, ok := readProc(int(pid)); ok {
			stalled = p.server
		}
	}
	for _, st := range s.hub.Status() {
		if st.State != conduit.StateUp && st.ID != stalled {
			return false
		}
	}
	return true
}

// talking reports whether the recorder of p has logged what it read.
func (s *soak) talking(p proc) bool {
	fi, err := os.Stat(filepath.Join(s.recDir, fmt.Sprintf("%s.%d.log", p.server, p.pid)))
	return err == nil && fi.Size() > 0
}

// kill SIGKILLs a server; the hub must notice and reconnect. It waits
// until the hub has every server again (the stalled one aside), so that
// one server at a time is lost: a fault, not an outage.
func (s *soak) kill(rng *rand.Rand) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && !s.allUp() {
		time.Sleep(20 * time.Millisecond)
	}
	p, ok := s.victim(rng)
	if !ok {
		s.problem("test", "no server process to kill: %v", children())
		return
	}
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
		s.problem("test", "kill %d: %v", p.pid, err)
		return
	}
	s.fault("kill")
}

// stall stops a server with SIGSTOP, and lets it go on with SIGCONT after
// -soak.stall: its calls wait, time out (RequestTimeout), and the hub may
// drop the session.
func (s *soak) stall(rng *rand.Rand) {
	p, ok := s.victim(rng)
	if !ok {
		s.problem("test", "no server process to stall: %v", children())
		return
	}
	s.stalled.Store(int64(p.pid))
	if err := syscall.Kill(p.pid, syscall.SIGSTOP); err != nil {
		s.stalled.Store(0)
		return
	}
	s.fault("stall")
	time.Sleep(*flagStallFor)
	syscall.Kill(p.pid, syscall.SIGCONT) // it may be gone by now: the hub dropped it
	s.stalled.Store(0)
}

// deep is v nested depth levels deep in arrays and objects.
func deep(depth int, v any) any {
	for i := range depth {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"a": v}
		}
	}
	return v
}

// hostileTurn runs one hostile response of a kind, through
// ExecuteToolCalls with the hub's current listing.
func (s *soak) hostileTurn(ctx context.Context, kind string, rng *rand.Rand) {
	ps := adapters.Providers()
	p := ps[rng.IntN(len(ps))]
	srv := s.servers[rng.IntN(len(s.servers))]
	ts, err := s.hub.ListTools(ctx)
	if err != nil {
		s.problem("test", "ListTools: %v", err)
		return
	}
	s.fault("hostile: " + kind)
	echo := func(name string) planned {
		id := s.id("h")
		return planned{id: id, name: name, args: map[string]any{"message": "m:" + id}, echo: "m:" + id}
	}
	// rejected is a call conduit must answer without sending: its message
	// says so to the recorder.
	rejected := func(name string, args any, kind *conduit.Error) planned {
		id := s.id("h")
		if args == nil {
			args = map[string]any{"message": "R:" + id}
		}
		return planned{id: id, name: name, args: args, rejected: true, kinds: []*conduit.Error{kind}}
	}
	var calls []planned
	switch kind {
	case "malformed JSON":
		id := s.id("h")
		full, _ := json.Marshal(adaptertest.FakeOf(p).Response("", planned{id: id, name: srv + "__echo", args: map[string]any{"message": "MALFORMED-" + id}}.raw()))
		bodies := [][]byte{
			full[:1+rng.IntN(len(full)-1)], // cut short: a strict prefix of an object is never JSON
			[]byte("<html><body>502 Bad Gateway</body></html>"),
			append(slices.Clone(full), []byte(`}`)...),
			[]byte(`[]`), []byte(`null`), []byte(`"text"`), []byte(`42`), []byte(``),
		}
		for _, body := range bodies {
			exec, err := adapters.ExecuteToolCalls(ctx, s.hub, p, body, &adapters.ExecOptions{ToolSet: ts})
			s.mu.Lock()
			s.turns++
			if err != nil {
				s.unread++
			} else if len(exec.Results) > 0 {
				s.problemLocked("malformed response run", "%s: %.80q gave %d results", p, body, len(exec.Results))
			}
			s.mu.Unlock()
		}
		return
	case "unknown tool names":
		for _, name := range []string{srv + "__nope", "echo", "", srv + "__echo ", "nosuch__echo", srv + "_echo", srv + "__get-env2"} {
			calls = append(calls, rejected(name, nil, conduit.ErrUnknownTool))
		}
	case "wrong argument types":
		calls = append(calls,
			rejected(srv+"__get-sum", map[string]any{"a": "two", "b": 3}, conduit.ErrInvalidArguments),
			rejected(srv+"__get-sum", map[string]any{"a": []any{1}, "b": map[string]any{}}, conduit.ErrInvalidArguments),
			rejected(srv+"__echo", map[string]any{"message": 5}, conduit.ErrInvalidArguments),
			rejected(srv+"__echo", map[string]any{}, conduit.ErrInvalidArguments),
			rejected(srv+"__get-structured-content", map[string]any{"location": "Paris"}, conduit.ErrInvalidArguments),
			echo(srv+"__echo"),
		)
	case "arguments not an object":
		for _, args := range []any{[]any{"m"}, "message", 42.0, true, `{"message":`, []any{}} {
			calls = append(calls, rejected(srv+"__echo", args, conduit.ErrInvalidArguments))
		}
		// JSON null: planned.raw writes nil as null.
		c := rejected(srv+"__echo", nil, conduit.ErrInvalidArguments)
		c.args = nil
		calls = append(calls, c, echo(srv+"__echo"))
	case "deep nesting":
		// Past Limits.MaxArgDepth's default (64): refused before the policy, with
		// nothing sent, and the calls beside them unharmed.
		nested := rejected(srv+"__echo", nil, conduit.ErrLimit)
		nested.args.(map[string]any)["nest"] = deep(5000, "x")
		calls = append(calls,
			nested,
			rejected(srv+"__echo", map[string]any{"message": deep(5000, "x")}, conduit.ErrLimit),
			echo(srv+"__echo"),
		)
	case "huge arguments":
		// Half of Limits.MaxArgBytes's default (1 MiB) is sent (and its echo reaches
		// the model cut to the result budget); 4 MiB is refused.
		big := echo(srv + "__echo")
		big.echo += " " + strings.Repeat("x", 512<<10)
		big.args = map[string]any{"message": big.echo}
		calls = append(calls, big,
			rejected(srv+"__get-sum", map[string]any{"a": 1.0, "b": 2.0, "pad": strings.Repeat("y", 4<<20)}, conduit.ErrLimit),
			echo(srv+"__echo"))
	case "thousands of calls":
		for i := range max(*flagMany, 1) {
			sv := s.servers[i%len(s.servers)]
			if i >= adapters.DefaultMaxToolCalls {
				// Past the limit of calls in one response: answered, never
				// sent, whatever they name.
				c := rejected(sv+"__echo", nil, conduit.ErrLimit)
				if i%10 == 1 {
					c.name = fmt.Sprintf("tool_%d", i)
				}
				calls = append(calls, c)
				continue
			}
			switch i % 10 {
			case 0, 5:
				calls = append(calls, echo(sv+"__echo"))
			case 1:
				calls = append(calls, rejected(sv+"__nope", nil, conduit.ErrUnknownTool))
			case 2:
				calls = append(calls, rejected(sv+"__echo", []any{i}, conduit.ErrInvalidArguments))
			case 3:
				id := fmt.Sprintf("h%d-%d", rng.Uint32(), i)
				calls = append(calls, planned{id: id, name: sv + "__echo", args: map[string]any{"message": "m:" + id + " " + forbidden},
					denied: true, kinds: []*conduit.Error{conduit.ErrDenied}})
			default:
				calls = append(calls, rejected(fmt.Sprintf("tool_%d", i), nil, conduit.ErrUnknownTool))
			}
		}
	case "duplicate call ids":
		base := s.id("dup")
		for k, id := range []string{base, base, base + "b", base + "b", base} {
			m := fmt.Sprintf("m:%s-%d", base, k)
			calls = append(calls, planned{id: id, name: s.servers[k%len(s.servers)] + "__echo", args: map[string]any{"message": m}, echo: m})
		}
	}
	s.hostile.Add(int64(len(calls)))
	exec, err, el := s.execute(ctx, p, nil, ts, calls, rng.IntN(2) == 0)
	s.check(p, calls, exec, err, el)
}

// records is what the servers read, as their recorder wrote it.
type records struct {
	calls     int             // tools/call requests
	perServer map[string]int  // of them, per server id
	echoes    map[string]bool // the first word of every echo message
	denied    []string        // calls the policy denies
	rejected  []string        // calls conduit must not send
	partial   int             // a last line cut short by a kill
}

// recordedPIDs are the pids of every server process that started.
func recordedPIDs(dir string) []int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var out []int
	for _, f := range files {
		parts := strings.Split(filepath.Base(f), ".")
		if len(parts) == 3 {
			if pid, err := strconv.Atoi(parts[1]); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// readRecords reads every recorder log: the JSON-RPC messages each server
// process read on stdin. known are the servers' tool names.
func readRecords(t *testing.T, dir string, known map[string]bool) records {
	t.Helper()
	rec := records{perServer: map[string]int{}, echoes: map[string]bool{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		t.Errorf("no recorder logs in %s: %v", dir, err)
		return rec
	}
	for _, file := range files {
		server, _, _ := strings.Cut(filepath.Base(file), ".")
		f, err := os.Open(file)
		if err != nil {
			t.Error(err)
			continue
		}
		r := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			last := errors.Is(err, io.EOF)
			if err != nil && !last {
				t.Error(err)
				break
			}
			line = bytes.TrimSpace(line)
			if len(line) > 0 {
				rec.line(server, line, last, known)
			}
			if last {
				break
			}
		}
		f.Close()
	}
	return rec
}

func (rec *records) line(server string, line []byte, last bool, known map[string]bool) {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		if last {
			rec.partial++ // the process was killed while reading it
		} else {
			rec.rejected = append(rec.rejected, fmt.Sprintf("%s read a line that is not JSON (%v): %.120q", server, err, line))
		}
		return
	}
	if msg.Method != "tools/call" {
		return
	}
	rec.calls++
	rec.perServer[server]++
	name, args := msg.Params.Name, bytes.TrimSpace(msg.Params.Arguments)
	if !known[name] {
		rec.rejected = append(rec.rejected, fmt.Sprintf("%s received a call of unknown tool %q", server, name))
	}
	if len(args) > 0 && args[0] != '{' {
		rec.rejected = append(rec.rejected, fmt.Sprintf("%s received %s with arguments %.80s", server, name, args))
		return
	}
	switch name {
	case "get-env":
		rec.denied = append(rec.denied, fmt.Sprintf("%s received get-env", server))
	case "get-sum":
		var a struct{ A, B any }
		json.Unmarshal(args, &a)
		_, okA := a.A.(float64)
		_, okB := a.B.(float64)
		if !okA || !okB {
			rec.rejected = append(rec.rejected, fmt.Sprintf("%s received get-sum %.80s", server, args))
		}
	case "echo":
		var a struct{ Message any }
		json.Unmarshal(args, &a)
		m, ok := a.Message.(string)
		switch {
		case !ok:
			rec.rejected = append(rec.rejected, fmt.Sprintf("%s received echo with message %.80v", server, a.Message))
		case strings.Contains(m, forbidden):
			rec.denied = append(rec.denied, fmt.Sprintf("%s received echo %.80q", server, m))
		case strings.HasPrefix(m, "R:"), strings.HasPrefix(m, "MALFORMED-"):
			rec.rejected = append(rec.rejected, fmt.Sprintf("%s received echo %.80q", server, m))
		default:
			if f := strings.Fields(m); len(f) > 0 {
				rec.echoes[strings.Clone(f[0])] = true
			}
		}
	}
}

// sample is one reading of the process's memory.
type sample struct {
	at       time.Duration
	progress float64 // calls issued / budget
	heap     uint64  // HeapInuse
	live     uint64  // HeapInuse right after a GC; 0 when none was forced
	rss, hwm uint64
}

var sampleStart = time.Now()

func (s *soak) sampleNow(gc bool) {
	if gc {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, hwm := memory()
	sm := sample{at: time.Since(sampleStart), progress: float64(s.issued.Load()) / float64(s.budget), heap: ms.HeapInuse, rss: rss, hwm: hwm}
	if gc {
		sm.live = ms.HeapInuse
	}
	s.mu.Lock()
	s.samples = append(s.samples, sm)
	s.mu.Unlock()
}

// sampler reads the memory twice a second, every fourth time after a GC,
// until done is closed.
func (s *soak) sampler(done <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-done:
			return
		case <-tick.C:
			s.sampleNow(n%4 == 3)
		}
	}
}

// liveAt returns the smallest live heap among the samples whose progress
// is in [lo, hi), and whether there was one. The smallest: a hostile
// response of MiBs in flight lifts a sample, a leak lifts them all.
func (s *soak) liveAt(lo, hi float64) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m uint64
	ok := false
	for _, sm := range s.samples {
		if sm.live > 0 && sm.progress >= lo && sm.progress < hi {
			if !ok || sm.live < m {
				m = sm.live
			}
			ok = true
		}
	}
	return m, ok
}

// memoryGrowth says how the heap grew in the run's second half past a
// generous bound: the least heap of its last quarter, and the heap at its
// end (the callers done), against the least of its second quarter: twice
// that, plus 32 MiB (the test's own books on every call id grow with the
// run, some 100 bytes a call).
func (s *soak) memoryGrowth(heapEnd uint64) string {
	const slack = 32 << 20
	mid, ok := s.liveAt(0.25, 0.5)
	if !ok {
		return ""
	}
	if heapEnd > 2*mid+slack {
		return fmt.Sprintf("the heap grew from %s in the second quarter of the run to %s at its end", mib(mid), mib(heapEnd))
	}
	if late, ok := s.liveAt(0.75, 10); ok && late > 2*mid+slack {
		return fmt.Sprintf("the heap grew from %s in the second quarter of the run to %s in its last quarter", mib(mid), mib(late))
	}
	return ""
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// percentiles returns the p50, p99 and largest of ds.
func percentiles(ds []time.Duration) (p50, p99, top time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return at(0.50), at(0.99), ds[len(ds)-1]
}

type summaryInput struct {
	elapsed, closeTook time.Duration
	rec                records
	heapEnd            uint64
	leakedG, leakedFD  []string
	leakedKids         []string
	startedPIDs        int
}

// summary is the run's figures, as a Markdown table.
func (s *soak) summary(in summaryInput) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	row := func(what string, format string, args ...any) {
		fmt.Fprintf(&b, "| %s | %s |\n", what, fmt.Sprintf(format, args...))
	}
	b.WriteString("| what | figure |\n| --- | --- |\n")
	row("calls written by the callers", "%d", s.issued.Load())
	row("calls in hostile responses", "%d", s.hostile.Load())
	row("responses executed", "%d (%d hostile ones unreadable, as they should be)", s.turns, s.unread)
	row("servers, callers", "%d server-everything over stdio, %d callers", len(s.servers), *flagCallers)
	row("duration", "%v", in.elapsed.Round(time.Millisecond))
	row("faults: SIGKILL", "%d", s.faults["kill"])
	row("faults: SIGSTOP", "%d (each for %v, then SIGCONT)", s.faults["stall"], *flagStallFor)
	for _, k := range hostileKinds {
		row("faults: hostile response, "+k, "%d", s.faults["hostile: "+k])
	}
	downs := 0
	for _, n := range s.downs {
		downs += n
	}
	row("conversations: tools offered p0 / p50 / p100", "%s (%d conversations)", spread(s.offered), len(s.offered))
	row("allowed calls to a tool left out of the listing (its server was down)", "%d", s.notOffered)
	row("sessions lost / established", "%d / %d", downs, s.ups)
	p50, p99, top := percentiles(s.recon)
	row("time from a session lost to the next: p50 / p99 / max", "%v / %v / %v", p50.Round(time.Millisecond), p99.Round(time.Millisecond), top.Round(time.Millisecond))
	for _, why := range slices.Sorted(maps.Keys(s.downs)) {
		row("sessions lost: "+strings.ReplaceAll(why, "|", "/"), "%d", s.downs[why])
	}
	for _, k := range slices.Sorted(maps.Keys(s.outcomes)) {
		row("answers: "+k, "%d", s.outcomes[k])
	}
	row("answers lost (goal 0)", "%d", s.nprob["answer lost"])
	row("answered twice (goal 0)", "%d", s.nprob["answered twice"])
	row("untyped errors, wrong answers, wrong error kinds (goal 0)", "%d, %d, %d", s.nprob["untyped error"], s.nprob["wrong answer"], s.nprob["wrong error"])
	row("denied calls answered with a result (goal 0)", "%d", s.nprob["denied answered"])
	row("denied calls that reached a server (goal 0)", "%d", len(in.rec.denied))
	row("rejected calls that reached a server (goal 0)", "%d", len(in.rec.rejected))
	row("results without a request on a server (goal 0)", "%d", s.nprob["answer without request"])
	row("tools/call requests the servers read", "%d (%s)", in.rec.calls, perServer(in.rec.perServer))
	row("server processes started", "%d", in.startedPIDs)
	row("leaked goroutines / fds / child processes (goal 0)", "%d / %d / %d", len(in.leakedG), len(in.leakedFD), len(in.leakedKids))
	row("Close took", "%v", in.closeTook.Round(time.Millisecond))
	var peak uint64
	for _, sm := range s.samples {
		peak = max(peak, sm.hwm)
	}
	row("peak RSS (VmHWM)", "%s", mib(peak))
	var first uint64
	if len(s.samples) > 0 {
		first = s.samples[0].live
	}
	s.mu.Unlock()
	q2, _ := s.liveAt(0.25, 0.5)
	q4, _ := s.liveAt(0.75, 10)
	s.mu.Lock()
	row("heap in use after GC: start / least in the 2nd quarter / least in the last quarter / end", "%s / %s / %s / %s", mib(first), mib(q2), mib(q4), mib(in.heapEnd))
	p50, p99, top = percentiles(s.callLat)
	row("latency per call in the pipeline: p50 / p99 / max", "%v / %v / %v (%d calls)", p50.Round(time.Microsecond), p99.Round(time.Microsecond), top.Round(time.Millisecond), len(s.callLat))
	row("the slowest call", "%v, %.160s", s.slowest.took.Round(time.Millisecond), strings.ReplaceAll(s.slowest.what, "|", "/"))
	p50, p99, top = percentiles(s.turnLat)
	row("latency per response, all its answers: p50 / p99 / max", "%v / %v / %v", p50.Round(time.Microsecond), p99.Round(time.Microsecond), top.Round(time.Millisecond))
	row("the slowest response", "%v, %s", s.slowestTurn.took.Round(time.Millisecond), s.slowestTurn.what)
	return b.String()
}

func perServer(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func spread(ns []int) string {
	if len(ns) == 0 {
		return "-"
	}
	ns = slices.Clone(ns)
	slices.Sort(ns)
	return fmt.Sprintf("%d / %d / %d", ns[0], ns[len(ns)/2], ns[len(ns)-1])
}
