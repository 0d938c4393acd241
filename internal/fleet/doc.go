// Package fleet holds the tests of conduit serve as a fleet (issue 32):
// three replicas of conduit serve --http, separate OS processes built
// from cmd/conduit, behind a real HAProxy that runs the fleet guide's
// configuration (docs/fleet/haproxy.cfg), sharing a real redis-server
// through "serve": {"store": ...} and CONDUIT_STATE_KEY, in front of
// downstream MCP servers that count every call they receive.
//
// TestFleet checks, with the Go SDK's client on MCP 2026-07-28 and the
// TypeScript SDK's on 2025-11-25: taint set through one replica applies
// on another; an approval answered through another replica runs the call
// once; limits hold across replicas; the sessions of 2025-11-25 stay on
// their replica through HAProxy; a replica stopped with SIGTERM drains
// without losing a call; a replica killed with SIGKILL under load loses
// only the calls in flight on it; Redis restarted refuses the calls of
// the outage with a clear error and the fleet recovers.
//
// TestFleetSoak (a few hundred calls in the suite; scripts/fleet-soak runs
// tens of thousands) and TestFleetLoad (calls/s and p50/p99 through
// HAProxy to one and to three replicas, run by scripts/fleet-soak -load)
// print figures that RELIABILITY.md and BENCHMARKS.md publish. The
// package has no API: it exists for its tests.
package fleet
