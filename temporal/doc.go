// Package temporal is to run conduit's governed tool calls on Temporal
// (go.temporal.io/sdk): activities over a worker's long-lived hub, and
// workflow helpers for an agent loop whose approvals may wait for days.
//
// For now it holds only the spike tests that show the parts fit: a
// workflow over a conduit client's activities under Temporal's test suite
// with time skipping, replayed from a recorded history, and (with the
// build tag temporalserver) on a real Temporal server run in process
// (go.temporal.io/server/temporaltest), worker processes killed mid-call
// included.
package temporal
