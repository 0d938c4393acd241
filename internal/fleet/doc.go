// Package fleet holds the tests of conduit serve as a fleet. Three
// replicas of conduit serve --http run as separate OS processes, built
// from cmd/conduit. A real HAProxy runs the fleet guide's configuration
// (docs/fleet/haproxy.cfg) in front of them. They share a real
// redis-server through "serve": {"store": ...} and CONDUIT_STATE_KEY.
// Behind them, downstream MCP servers count every call they receive.
//
// TestFleet uses the Go SDK's client on MCP 2026-07-28 and the TypeScript
// SDK's on 2025-11-25. It checks that:
//
//   - taint set through one replica applies on another;
//   - an approval answered through another replica runs the call once;
//   - limits hold across replicas;
//   - the sessions of 2025-11-25 stay on their replica through HAProxy;
//   - a replica stopped with SIGTERM drains without losing a call;
//   - a replica killed with SIGKILL under load loses only its calls in
//     flight;
//   - a restarted Redis refuses the outage's calls with a clear error, and
//     the fleet recovers.
//
// TestFleetSoak runs a few hundred calls in the suite; scripts/fleet-soak
// runs tens of thousands. TestFleetLoad measures calls/s and p50/p99
// through HAProxy to one and to three replicas (scripts/fleet-soak -load).
// Both print figures that RELIABILITY.md and BENCHMARKS.md publish. The
// package has no API: it exists for its tests.
package fleet
