// Package codemode runs code a model writes against the tools. Every
// call the code makes is governed as a model's own call.
//
// With code mode a model is offered one tool, run_code. Its one
// argument, code, is the body of an async JavaScript function.
// TypeScript type annotations are allowed. Its description declares the
// tools the principal may call now, in TypeScript. Each server is a
// global object named by its id. Each tool is an async method.
// Characters outside [A-Za-z0-9_] become '_'. A call resolves to the
// result's structuredContent, else its text. A refused or failed call
// rejects with an Error saying why.
//
// Each call the code makes goes through the source's pipeline, a Hub's
// or a Client's. It carries the run's principal, assigns and taint.
// Policy, approval, hooks, validation, limits and Trace decide it as
// they decide a model's call. Output a call reads taints the later calls
// of the run.
//
// The code runs in a fresh QuickJS VM per run (modernc.org/quickjs, pure
// Go). Limits bound it: wall time, memory, calls, output and code size.
// It has no file system, network, environment, timers or clock.
// Math.random is a fixed sequence. A run is deterministic. So a deferred
// run can be replayed from its Records in another process, with nothing
// sent twice.
package codemode
