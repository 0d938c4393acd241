package fleet_test

// The fleet's soak (a short run in the suite, the long one by
// scripts/fleet-soak) and its load figures (scripts/fleet-soak -load).

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var (
	flagCalls    = flag.Int("fleet.calls", 300, "soak: calls at least (the run goes on until every fault is injected and the fleet has answered after them)")
	flagCallers  = flag.Int("fleet.callers", 8, "soak and load: concurrent callers through HAProxy")
	flagOutage   = flag.Duration("fleet.outage", time.Second, "soak: how long Redis stays stopped")
	flagSummary  = flag.String("fleet.summary", "", "file the figures are written to (appended)")
	flagLoad     = flag.Bool("fleet.load", false, "run TestFleetLoad: calls/s and p50/p99 through HAProxy to 1 and to 3 replicas")
	flagLoadSize = flag.Int("fleet.loadcalls", 5000, "load: calls measured for each fleet size (after 10% more to warm up)")
)

// summary prints lines and appends them to -fleet.summary.
func summary(t *testing.T, lines ...string) {
	text := strings.Join(lines, "\n") + "\n"
	t.Log("\n" + text)
	if *flagSummary == "" {
		return
	}
	f, err := os.OpenFile(*flagSummary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	f.WriteString(text)
}

// TestFleetSoak: -fleet.calls calls of fs/write through HAProxy to three
// replicas, while replica 2 is killed (SIGKILL) at a quarter of them and
// started again at 45%, and Redis is stopped at 60% for -fleet.outage.
// Lost (no answer, and not in flight on the killed replica when it died)
// and sent twice (seen twice by the downstream server) must be 0; every
// answer is the call's own; the calls of the outage are refused saying
// the store is unavailable.
func TestFleetSoak(t *testing.T) {
	f := startFleet(t, 3, 0)
	calls := int64(*flagCalls)
	var target atomic.Int64 // calls to make; raised once the faults are done
	target.Store(1 << 62)
	var completed atomic.Int64
	var result []loadCall
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(done)
		result = drive(f, "load", "soak", "fs__write", 0, *flagCallers, func(i int64) bool {
			if i >= target.Load() {
				return false
			}
			completed.Add(1) // started, rather: close enough to pace the faults
			return true
		})
	}()
	at := func(frac float64) {
		for completed.Load() < int64(frac*float64(calls)) {
			time.Sleep(2 * time.Millisecond)
		}
	}
	at(0.25)
	killStart := time.Now()
	f.replicas[1].Kill()
	killEnd := time.Now()
	at(0.45)
	f.replicas[1].Start()
	killedFor := time.Since(killStart)
	at(0.60)
	outageStart := time.Now()
	f.redis.Stop()
	time.Sleep(*flagOutage)
	f.redis.Start()
	outageEnd := time.Now()
	// After the faults, a fifth more (at least 100), so that the recovery
	// is seen; and never fewer than asked.
	target.Store(max(calls, completed.Load()+max(calls/5, 100)))
	<-done
	elapsed := time.Since(begin)

	var ok, down, inFlight, lost, other, wrong, answeredAfter int
	for _, c := range result {
		switch {
		case c.out == answered:
			ok++
			if c.text != "wrote "+c.id || f.down.count(c.id) != 1 {
				wrong++
				t.Errorf("call %s answered %q, and reached the server %d times", c.id, c.text, f.down.count(c.id))
			}
			if c.start.After(outageEnd) {
				answeredAfter++
			}
		case c.out == refusedDown:
			down++
		case c.out == failed && c.start.Before(killEnd) && c.end.After(killStart):
			inFlight++
		case c.out == failed || c.out == hung:
			lost++
			if lost <= 10 {
				t.Errorf("call %s lost (%v to %v): %v %v", c.id, c.start.Format(time.StampMicro), c.end.Format(time.StampMicro), c.out, c.err)
			}
		default:
			other++
			if other <= 10 {
				t.Errorf("call %s: %v %q", c.id, c.out, c.text)
			}
		}
	}
	var twice []string
	for _, id := range f.down.twice() {
		if strings.HasPrefix(id, "soak-") {
			twice = append(twice, id)
		}
	}
	slices.Sort(twice)
	if len(twice) > 0 {
		t.Errorf("sent twice: %v", twice)
	}
	if answeredAfter == 0 {
		t.Error("no call was answered after Redis came back")
	}
	if inFlight > *flagCallers {
		t.Errorf("%d calls failed in flight on the killed replica, more than the %d callers", inFlight, *flagCallers)
	}
	summary(t,
		fmt.Sprintf("fleet soak: %d calls in %v (%.0f calls/s) from %d callers through HAProxy to 3 replicas sharing Redis",
			len(result), elapsed.Round(time.Millisecond), float64(len(result))/elapsed.Seconds(), *flagCallers),
		fmt.Sprintf("  faults: replica 2 SIGKILLed (up again %v later), Redis stopped for %v",
			killedFor.Round(time.Millisecond), outageEnd.Sub(outageStart).Round(time.Millisecond)),
		fmt.Sprintf("  answered                                  %d", ok),
		fmt.Sprintf("  refused: shared store unavailable         %d", down),
		fmt.Sprintf("  failed in flight on the killed replica    %d", inFlight),
		fmt.Sprintf("  LOST (no answer, not in flight)           %d", lost),
		fmt.Sprintf("  SENT TWICE (seen twice downstream)        %d", len(twice)),
		fmt.Sprintf("  other refusals / wrong answers            %d / %d", other, wrong),
	)
}

// TestFleetLoad measures calls/s and the p50 and p99 latency of fs/write
// through HAProxy to one and to three replicas (sharing Redis), from
// -fleet.callers callers. Asked for by -fleet.load (scripts/fleet-soak
// -load): it is a measurement, not part of the suite.
func TestFleetLoad(t *testing.T) {
	if !*flagLoad {
		t.Skip("a measurement: run by scripts/fleet-soak -load (or -fleet.load)")
	}
	var lines []string
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("replicas=%d", n), func(t *testing.T) {
			f := startFleet(t, n, 0)
			size := int64(*flagLoadSize)
			warm := size / 10
			prefix := fmt.Sprintf("load%d", n)
			drive(f, "load", prefix+"w", "fs__write", 0, *flagCallers, func(i int64) bool { return i < warm })
			begin := time.Now()
			calls := drive(f, "load", prefix, "fs__write", 0, *flagCallers, func(i int64) bool { return i < size })
			elapsed := time.Since(begin)
			var lat []time.Duration
			for _, c := range calls {
				if c.out != answered {
					t.Errorf("call %s: %v %q %v", c.id, c.out, c.text, c.err)
					continue
				}
				lat = append(lat, c.end.Sub(c.start))
			}
			slices.Sort(lat)
			if len(lat) == 0 {
				t.Fatal("no call answered")
			}
			pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
			lines = append(lines, fmt.Sprintf("  %d replica(s): %6.0f calls/s   p50 %-10v p99 %v",
				n, float64(len(calls))/elapsed.Seconds(), pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond)))
		})
	}
	summary(t, append([]string{fmt.Sprintf("fleet load: %d calls of fs/write (governed: the policy, and the taint read in Redis) from %d callers through HAProxy",
		*flagLoadSize, *flagCallers)}, lines...)...)
}
