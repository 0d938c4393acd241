// Package soak holds conduit's soak test under faults, TestSoak. Concurrent
// agent-like callers make tens of thousands of governed calls, in the
// providers' formats. The calls go over several real stdio servers in one
// conduit.Hub. Meanwhile a fault injector kills servers (SIGKILL), stalls
// one (SIGSTOP, then SIGCONT) and feeds hostile responses to the adapters.
// It checks that:
//
//   - every call is answered exactly once;
//   - no call the policy denies reaches a server, as seen from inside the
//     servers;
//   - Close leaves no goroutine, file descriptor or child process behind;
//   - memory stays flat.
//
// A short run (2,000 calls) is part of the normal suite. scripts/soak runs
// the long one and prints its figures (RELIABILITY.md). The package has no
// API: it exists for its test.
package soak
