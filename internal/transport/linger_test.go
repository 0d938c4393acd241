package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// streamServer answers each request with one event, then ends the stream
// once end is closed (or at once, when end is nil).
func streamServer(t *testing.T, end chan struct{}) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var opened atomic.Int64
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":1}\n\n")
		w.(http.Flusher).Flush()
		if end != nil {
			select {
			case <-end:
			case <-r.Context().Done():
			}
		}
	}))
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	hs.Start()
	t.Cleanup(hs.Close)
	return hs, &opened
}

// TestLingerKeepsConnection: a request canceled after its answer was
// read, while the stream's end is still on its way, leaves its connection
// to be used again. Without Linger, net/http closes it.
func TestLingerKeepsConnection(t *testing.T) {
	end := make(chan struct{})
	hs, opened := streamServer(t, end)
	rt := Linger(hs.Client().Transport, time.Hour)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: {\"id\":1}\n" {
		t.Fatalf("%q %v", line, err)
	}
	cancel() // the call has its answer and returns
	close(end)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	req, _ = http.NewRequest(http.MethodPost, hs.URL, nil)
	resp, err = rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n := opened.Load(); n != 1 {
		t.Fatalf("two requests opened %d connections", n)
	}
}

// TestLingerCancelBeforeResponse: a request canceled before its response
// arrives is aborted at once, whatever the grace.
func TestLingerCancelBeforeResponse(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer hs.Close()
	rt := Linger(hs.Client().Transport, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestLingerBounded: a stream that does not end within the grace after
// its request was canceled is aborted, so its reader is not held.
func TestLingerBounded(t *testing.T) {
	end := make(chan struct{})
	defer close(end)
	hs, _ := streamServer(t, end)
	rt := Linger(hs.Client().Transport, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	if _, err := io.Copy(io.Discard, resp.Body); err == nil {
		t.Fatal("a stream that never ended was read to its end")
	}
}

// TestLingerNoCancel: a request whose context cannot end is passed on
// as it is.
func TestLingerNoCancel(t *testing.T) {
	hs, opened := streamServer(t, nil)
	rt := Linger(nil, time.Second)
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := opened.Load(); n != 1 {
		t.Fatalf("two requests opened %d connections", n)
	}
}

// TestLingerNotForGet: a session's own event stream (a GET) ends with its
// context at once, whatever the grace.
func TestLingerNotForGet(t *testing.T) {
	end := make(chan struct{})
	defer close(end)
	hs, _ := streamServer(t, end)
	rt := Linger(hs.Client().Transport, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	if _, err := io.Copy(io.Discard, resp.Body); err == nil {
		t.Fatal("a canceled GET's stream was read to its end")
	}
}

// TestLingerCanceledNotSent: a request whose context ended before it was
// sent never reaches the server.
func TestLingerCanceledNotSent(t *testing.T) {
	var got atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer hs.Close()
	rt := Linger(hs.Client().Transport, time.Hour)
	warm, _ := http.NewRequest(http.MethodPost, hs.URL, nil)
	if resp, err := rt.RoundTrip(warm); err == nil {
		resp.Body.Close()
	}
	for range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, nil)
		if resp, err := rt.RoundTrip(req); err == nil {
			resp.Body.Close()
			t.Fatal("a canceled request was answered")
		}
	}
	if n := got.Load(); n != 1 {
		t.Fatalf("the server saw %d requests, want the warm-up alone", n)
	}
}
