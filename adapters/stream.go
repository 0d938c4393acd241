package adapters

// Streamed responses. Each call of a response the model is still
// streaming is sent once the model has written it whole.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/sse"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StreamEvent is one server-sent event of a streamed response. It holds
// its event name ("" when none) and its data. [Stream.Feed] takes them.
type StreamEvent = driver.Event

// ErrStreamInterrupted is what a [Stream] reports, wrapped, when the
// stream ends early. That is before the provider's event that says the
// response is whole.
var ErrStreamInterrupted = errors.New("adapters: the stream ended before the response was whole")

// ErrNoStreaming is returned for a provider whose driver reads no
// streamed responses. Such a driver is not a driver.Streamer.
var ErrNoStreaming = errors.New("adapters: the provider does not read streamed responses")

// StreamOptions say what a [Stream] tells its caller while it reads. The
// zero value tells nothing. A nil *StreamOptions is the zero value.
type StreamOptions struct {
	// Text, when set, is given each piece of text the model streams. It
	// is called as the text is read, on the goroutine that feeds the stream.
	Text func(text string)
	// Started, when set, is told of each call as it is handed to the
	// pipeline. That is before its answer. It is called on the goroutine
	// that feeds the stream.
	Started func(c toolcall.Call)
}

// Streamed is the outcome of a streamed response. It holds the Execution
// of its calls, as ExecuteToolCalls makes of a whole response. It also
// says what the stream was.
type Streamed struct {
	*Execution
	// Response is the response made of the stream. It has the shape the
	// provider's API returns when it does not stream. It goes into the
	// conversation as the model's turn (Wire.Turn reads it).
	Response map[string]any `json:"response"`
	// Ended reports that the stream reached the provider's end event.
	// The end events are:
	//
	//   - Anthropic: message_stop;
	//   - Chat: [DONE];
	//   - Responses: response.completed;
	//   - Gemini: finishReason;
	//   - Bedrock: messageStop.
	Ended bool `json:"ended"`
	// Unfinished are the calls the model began and the stream did not
	// complete. They include calls completed after one that was not.
	// They were never sent and have no answer.
	Unfinished []toolcall.Raw `json:"unfinished"`
}

// Stream reads one streamed response. It sends each of its calls through
// the governed pipeline once the model has written it whole. The rest
// streams in meanwhile. Its Close waits for the calls and answers them
// all in the model's order. Feed, ReadFrom and Close are used by one
// goroutine.
//
// A halt stops the calls not yet sent, those still to come included. It
// is an approver's halt or ExecOptions.Halt, as in ExecuteToolCalls.
// Calls start in the model's order, at most MaxConcurrency at a time. So
// what follows a halt is answered as halted. The response is bounded by
// ExecOptions.Limits. Past MaxResponseBytes of events the stream ends
// with ErrResponseTooLarge. The calls past MaxToolCalls are answered
// with an error and not sent. Close must be called, even after an error.
// It ends the goroutines the Stream runs.
type Stream struct {
	ctx    context.Context
	d      driver.Provider
	parser driver.Stream
	o      *ExecOptions
	so     StreamOptions
	ts     *conduit.ToolSet
	r      *runner

	raws  []toolcall.Raw
	calls []toolcall.Call // resolved, by position; those past the limit not
	read  int             // bytes of events
	ended bool
	err   error
	// finish, for a Conversation's stream, does the Conversation's part.
	// It runs once the calls are answered.
	finish func(*Streamed) error
	result *Streamed
	closed bool

	mu      sync.Mutex
	queue   []toolcall.Call
	closing bool
	wake    chan struct{}
	done    chan struct{}
	outs    map[int]streamOutcome
	stopped chan struct{} // closed by Close: the Halt watcher ends
}

// streamOutcome is a sent call's result or error.
type streamOutcome struct {
	res *mcp.CallToolResult
	err error
}

// NewStream returns a Stream that reads a response of provider p,
// streamed in p's events. It sends the calls through src with o, as
// ExecuteToolCalls does. The calls resolve against o.ToolSet. When it is
// nil, they resolve against src's tools, listed now. o and so may be
// nil. The error matches ErrNoStreaming for a provider that reads no streams.
func NewStream(ctx context.Context, src conduit.Source, p Provider, o *ExecOptions, so *StreamOptions) (*Stream, error) {
	d, err := p.valid()
	if err != nil {
		return nil, err
	}
	st, ok := d.(driver.Streamer)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoStreaming, p)
	}
	if o == nil {
		o = &ExecOptions{}
	}
	ts := o.ToolSet
	if ts == nil {
		if ts, err = src.ListToolsFor(ctx, &conduit.ListOptions{Principal: o.Principal, Taint: o.Taint}); err != nil {
			return nil, err
		}
	}
	s := &Stream{ctx: ctx, d: d, parser: st.Stream(), o: o, ts: ts,
		wake: make(chan struct{}, 1), done: make(chan struct{}), outs: map[int]streamOutcome{}, stopped: make(chan struct{})}
	if so != nil {
		s.so = *so
	}
	exec := &Execution{}
	for _, l := range o.locals {
		exec.locals = append(exec.locals, l.Tool)
	}
	s.r = &runner{src: src, d: d, o: o, ts: ts, exec: exec, halt: make(chan struct{})}
	if o.Halt != nil {
		go func() {
			select {
			case <-o.Halt:
				s.r.stop()
			case <-s.stopped:
			}
		}()
	}
	go s.dispatch()
	return s, nil
}

// ExecuteStream reads a streamed response of provider p from r. r holds
// its server-sent events, as the API sent them. It runs the calls as a
// Stream does, each once it is whole. The Streamed answers every
// complete call in the model's order. The error is the Stream's (see
// Stream.Close). The Streamed comes with it when the stream could be begun.
func ExecuteStream(ctx context.Context, src conduit.Source, p Provider, r io.Reader, o *ExecOptions, so *StreamOptions) (*Streamed, error) {
	s, err := NewStream(ctx, src, p, o, so)
	if err != nil {
		return nil, err
	}
	s.ReadFrom(r)
	return s.Close()
}

// Feed reads one event. It returns an error for an event that cannot be
// read, reports the API's error, or comes past the size limit. The stream
// ends there, and every later Feed returns that error. Close still
// answers the calls already whole.
func (s *Stream) Feed(e StreamEvent) error {
	if s.closed {
		return errors.New("adapters: Feed on a closed Stream")
	}
	if s.err != nil {
		return s.err
	}
	s.read += len(e.Name) + len(e.Data)
	if max := s.o.Limits.maxBytes(); max >= 0 && s.read > max {
		s.err = fmt.Errorf("%w: the stream's events are more than %d bytes", ErrResponseTooLarge, max)
		return s.err
	}
	step, err := s.parser.Event(e)
	if err != nil {
		s.err = err
		return err
	}
	if step.Text != "" && s.so.Text != nil {
		s.so.Text(step.Text)
	}
	for _, raw := range step.Calls {
		s.add(raw)
	}
	if step.Done {
		s.ended = true
	}
	return nil
}

// ReadFrom reads server-sent events from r and feeds them. It stops when
// r ends or an event fails. It returns the bytes read and the first
// error. The end of r is not an error. Close reports a stream that
// ended early.
func (s *Stream) ReadFrom(r io.Reader) (int64, error) {
	max := s.o.Limits.maxBytes()
	if max >= 0 {
		max -= s.read
	}
	sr := sse.NewReader(r, max)
	for {
		ev, err := sr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return int64(sr.Read()), nil
			}
			if errors.Is(err, sse.ErrTooLarge) {
				err = fmt.Errorf("%w: the stream is more than %d bytes", ErrResponseTooLarge, s.o.Limits.maxBytes())
			} else {
				err = fmt.Errorf("adapters: reading the stream: %w", err)
			}
			if s.err == nil {
				s.err = err
			}
			return int64(sr.Read()), err
		}
		if err := s.Feed(StreamEvent{Name: ev.Name, Data: ev.Data}); err != nil {
			return int64(sr.Read()), err
		}
	}
}

// add resolves a call the stream completed and hands it to the pipeline.
// A call answered without being sent is not handed over.
func (s *Stream) add(raw toolcall.Raw) {
	k := len(s.raws)
	s.raws = append(s.raws, raw)
	if max := s.o.Limits.maxCalls(); max >= 0 && k >= max {
		return // answered by Close, which knows how many there were
	}
	c := toolcall.Resolve([]toolcall.Raw{raw}, s.ts)[0]
	c.Index = k
	if c.Err == nil {
		if st, ok := s.d.(driver.Strict); ok {
			for _, np := range s.o.NullPaths[c.Name] {
				st.StripNull(c.Args, np)
			}
		}
	}
	s.calls = append(s.calls, c)
	if c.Err != nil {
		return
	}
	if s.so.Started != nil {
		s.so.Started(c)
	}
	s.mu.Lock()
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// dispatch starts the queued calls in order, at most MaxConcurrency at a
// time. It runs until Close, once the queue is empty.
func (s *Stream) dispatch() {
	defer close(s.done)
	workers := s.o.MaxConcurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	slots := make(chan struct{}, workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return
			}
			<-s.wake
			continue
		}
		c := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			res, err := s.r.call(s.ctx, c)
			if ce := (*conduit.Error)(nil); errors.As(err, &ce) && ce.Halt {
				s.r.stop()
				s.mu.Lock()
				s.r.exec.Halted = true
				s.mu.Unlock()
			}
			s.mu.Lock()
			s.outs[c.Index] = streamOutcome{res, err}
			s.mu.Unlock()
		})
	}
}

// Close ends the stream and waits for the calls sent. It answers every
// call the stream completed, in the model's order. It does so as
// ExecuteToolCalls answers a whole response. The error is the stream's:
//
//   - an event that could not be read;
//   - the API's error;
//   - ErrResponseTooLarge;
//   - ErrStreamInterrupted, when the stream ended early.
//
// The Streamed comes with the error. Its Unfinished names the calls
// never sent. Close may be called again, and returns the same.
func (s *Stream) Close() (*Streamed, error) {
	if s.closed {
		return s.result, s.closeErr()
	}
	s.closed = true
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
	close(s.stopped)

	exec, r := s.r.exec, s.r
	n := len(s.raws)
	exec.Results, exec.Errors = make([]map[string]any, n), make([]error, n)
	exec.Budgets, exec.demands = make([]toolcall.Budgeted, n), make([]int, n)
	r.results = make([]*mcp.CallToolResult, n)
	calls := s.calls
	if len(calls) < n {
		// The calls past the limit, with the count now known.
		calls = append(slices.Clip(calls), s.o.Limits.resolve(s.raws, s.ts)[len(calls):]...)
	}
	var sent []toolcall.Call
	for _, c := range calls {
		i := c.Index
		if c.Err != nil {
			exec.Errors[i] = c.Err
			exec.Results[i], exec.Budgets[i] = write(s.d, c, nil, c.Err, &s.o.Answers)
			continue
		}
		exec.Calls = append(exec.Calls, c)
		sent = append(sent, c)
		out := s.outs[i]
		exec.Errors[i] = out.err
		if p, ok := pendingOf(c, out.err); ok {
			exec.Pending = append(exec.Pending, p)
			continue
		}
		r.results[i] = out.res
	}
	r.finish(s.ctx, sent)
	r.pendingInOrder()
	s.result = &Streamed{Execution: exec, Response: s.parser.Response(), Ended: s.ended, Unfinished: s.parser.Open()}
	if s.result.Unfinished == nil {
		s.result.Unfinished = []toolcall.Raw{}
	}
	if s.err == nil && !s.ended {
		s.err = fmt.Errorf("%w (%d call(s) complete, %d unfinished)", ErrStreamInterrupted, n, len(s.result.Unfinished))
	}
	if s.finish != nil {
		if err := s.finish(s.result); err != nil && s.err == nil {
			s.err = err
		}
	}
	return s.result, s.closeErr()
}

func (s *Stream) closeErr() error { return s.err }

// NewStream begins a turn whose response is streamed, as Execute runs a
// whole one. Its calls resolve against the tools the model was offered.
// They run with the conversation's taint, each once the stream has it
// whole. The Stream's Close answers them and adds to the taint. It also
// reveals what conduit's search found and keeps the calls deferred, as
// Execute does. Execute and NewStream refuse another turn
// (ErrTurnPending) only once that Close leaves calls pending. so may be nil.
func (c *Conversation) NewStream(ctx context.Context, so *StreamOptions) (*Stream, error) {
	ctx, o, n, rv, err := c.beginTurn(ctx)
	if err != nil {
		return nil, err
	}
	s, err := NewStream(ctx, c.src, c.p, &o, so)
	if err != nil {
		return nil, err
	}
	s.finish = func(st *Streamed) error {
		exec := st.Execution
		if rv != nil {
			exec.Revealed = c.reveal(ctx, rv.inOrder(exec.Errors))
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.addTaint(exec.Taint(nil))
		if !exec.Complete() {
			if c.turn != nil {
				return fmt.Errorf("%w: the calls deferred by this one cannot be resumed", ErrTurnPending)
			}
			c.turn = newPausedTurn(n, o.Taint, exec)
		}
		return nil
	}
	return s, nil
}

// ExecuteStream reads a streamed response from r, the API's server-sent
// events. It runs its calls as Execute runs a whole response's. Each
// runs once it is whole (see Conversation.NewStream and Stream.Close).
func (c *Conversation) ExecuteStream(ctx context.Context, r io.Reader, so *StreamOptions) (*Streamed, error) {
	s, err := c.NewStream(ctx, so)
	if err != nil {
		return nil, err
	}
	s.ReadFrom(r)
	return s.Close()
}
