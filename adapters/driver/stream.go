package driver

import "github.com/conduitmcp/conduit/adapters/toolcall"

// Streams: a provider whose API streams its responses reads them event by
// event. So each call can start as soon as the model has written it.

// Streamer is a Provider that reads its API's streamed responses.
type Streamer interface {
	// Stream returns a reader of one streamed response.
	Stream() Stream
}

// Event is one event of a streamed response. It holds its server-sent
// event name, "" when the stream names none. It holds its data, JSON text.
// OpenAI Chat's last is [DONE].
type Event struct {
	Name string
	Data []byte
}

// Stream reads the events of one streamed response, in order. It is used
// by one goroutine at a time.
type Stream interface {
	// Event reads one event. Its error is for an event that cannot be
	// read, or one that reports the API's error. The stream ends there.
	Event(e Event) (Step, error)
	// Response is the response made of the events so far. Its shape is the
	// one the provider's API returns when it does not stream. Parse reads
	// it, and it goes into the conversation. Calls not complete hold the
	// arguments read so far. It is the caller's.
	Response() map[string]any
	// Open returns the calls the model began and did not complete, in its
	// order. Their Args are nil.
	Open() []toolcall.Raw
}

// Step is what one event added.
type Step struct {
	// Calls are the calls the event completed, in the model's order, each
	// as Parse reads it from the whole response.
	Calls []toolcall.Raw
	// Text is the text the event added to the model's answer.
	Text string
	// Done reports the event that says the response is whole.
	Done bool
}

// CallOrder keeps a stream's calls in the order the model began them. It
// releases each once it and every call begun before it are complete. So a
// stream that ends blocks out of order still runs them in the model's
// order. The zero value is ready to use.
type CallOrder struct {
	calls []orderedCall
	next  int
}

type orderedCall struct {
	raw  toolcall.Raw
	done bool
}

// Begin records a call the model began, by its id and name, and returns
// its slot.
func (o *CallOrder) Begin(id, name string) int {
	o.calls = append(o.calls, orderedCall{raw: toolcall.Raw{ID: id, Name: name}})
	return len(o.calls) - 1
}

// Complete records the call in slot as r, and returns the calls now
// released, in order. A slot completed twice keeps its first call.
func (o *CallOrder) Complete(slot int, r toolcall.Raw) []toolcall.Raw {
	if slot < 0 || slot >= len(o.calls) || o.calls[slot].done {
		return nil
	}
	o.calls[slot] = orderedCall{raw: r, done: true}
	var out []toolcall.Raw
	for o.next < len(o.calls) && o.calls[o.next].done {
		out = append(out, o.calls[o.next].raw)
		o.next++
	}
	return out
}

// Open returns the calls not yet released, in order: those not complete
// with their Args nil.
func (o *CallOrder) Open() []toolcall.Raw {
	var out []toolcall.Raw
	for _, c := range o.calls[o.next:] {
		r := c.raw
		if !c.done {
			r.Args = nil
		}
		out = append(out, r)
	}
	return out
}
