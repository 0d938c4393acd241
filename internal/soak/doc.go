// Package soak holds conduit's soak test under faults, TestSoak: tens of
// thousands of governed calls from concurrent agent-like callers, in the
// four providers' formats, over several real stdio servers in one
// conduit.Hub, while a fault injector kills servers (SIGKILL), stalls one
// (SIGSTOP, then SIGCONT) and feeds hostile responses through the
// adapters. It checks that every call is answered exactly once, that no
// call the policy denies reaches a server (seen from inside the servers,
// not through conduit), that Close leaves no goroutine, file descriptor or
// child process behind, and that memory stays flat.
//
// A short run (2,000 calls) is part of the normal suite; scripts/soak runs
// the long one and prints its figures (see RELIABILITY.md). The package has
// no API: it exists for its test.
package soak
