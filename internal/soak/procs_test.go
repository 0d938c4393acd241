package soak_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// What the process holds, read from outside the code under test: the
// runtime's goroutine dump and Linux's /proc.

// goroutines returns the stacks of all goroutines by id.
func goroutines() map[int]string { return testenv.Goroutines() }

// newGoroutines returns the stacks of the goroutines not in baseline.
func newGoroutines(baseline map[int]string) []string {
	var out []string
	for id, stack := range goroutines() {
		if _, ok := baseline[id]; !ok {
			out = append(out, stack)
		}
	}
	slices.Sort(out)
	return out
}

// fds returns this process's open file descriptors and what each refers
// to.
func fds() map[int]string {
	out := map[int]string{}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return out
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the directory's own descriptor, closed by now
		}
		out[n] = target
	}
	return out
}

// newFDs describes the descriptors open now that were not in baseline (or
// that now refer to something else).
func newFDs(baseline map[int]string) []string {
	var out []string
	for n, target := range fds() {
		if baseline[n] != target {
			out = append(out, fmt.Sprintf("fd %d → %s", n, target))
		}
	}
	slices.Sort(out)
	return out
}

// proc is one process as /proc/<pid>/stat shows it.
type proc struct {
	pid, ppid int
	state     byte // R, S, T (stopped), Z (zombie), ...
	server    string
}

// readProc reads /proc/<pid>/stat, and the SOAK_SERVER_ID of the
// process's environment.
func readProc(pid int) (proc, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	p := proc{pid: pid, ppid: ppid, state: f[0][0]}
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("SOAK_SERVER_ID=")); ok {
				p.server = string(v)
			}
		}
	}
	return p, true
}

// children returns this process's child processes, zombies included.
func children() []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && p.ppid == self {
			out = append(out, p)
		}
	}
	return out
}

// ourChild reports whether pid is still a process of ours (running,
// stopped or an unreaped zombie). A pid the kernel gave to someone
// else's process since is not.
func ourChild(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return false
	}
	p, ok := readProc(pid)
	return ok && p.ppid == os.Getpid()
}

// memory is what /proc/self/status says of this process's memory, in
// bytes: its resident set now and at its peak.
func memory() (rss, hwm uint64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseUint(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		}
	}
	return rss, hwm
}
