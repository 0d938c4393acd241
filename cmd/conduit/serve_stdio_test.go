package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeStdio20260728: conduit serve over stdio, a real OS process,
// speaks protocol 2026-07-28 to a Go SDK client that asks for it (and
// 2025-11-25 to one that asks for that). On 2026-07-28, which has no
// server-to-client requests, a call the policy asks about is asked in
// the answer (an input request) and runs once the client accepts.
func TestServeStdio20260728(t *testing.T) {
	data, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(data, "note.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmdName, args := testenv.Filesystem(t, data)
	dir := writeConfig(t, []any{map[string]any{"ask": []string{"fs/list_directory"}}, map[string]any{"allow": []string{"fs/read_text_file"}}},
		"fs", map[string]any{"command": cmdName, "args": args})
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "serve", "--connect-timeout", "50s")
			cmd.Dir, cmd.Env = dir, binaryEnv()
			var errb strings.Builder
			cmd.Stderr = &errb
			var asked atomic.Int32
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			})
			sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, errb.String())
			}
			defer sess.Close()
			if got := sess.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			lt, err := sess.ListTools(ctx, nil)
			if err != nil || len(lt.Tools) == 0 {
				t.Fatalf("tools/list: %v, %v\n%s", lt, err, errb.String())
			}
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": file}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hello" {
				t.Fatalf("read: %+v, %v\n%s", res, err, errb.String())
			}
			res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "fs__list_directory", Arguments: map[string]any{"path": data}})
			if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "note.txt") {
				t.Fatalf("an approved call: %+v, %v\n%s", res, err, errb.String())
			}
			if asked.Load() != 1 {
				t.Fatalf("asked %d times, want 1", asked.Load())
			}
		})
	}
}
