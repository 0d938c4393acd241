package conduit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The defaults of [Limits].
const (
	defaultMaxArgDepth     = 64
	defaultMaxArgBytes     = 1 << 20  // 1 MiB
	defaultMaxResultBytes  = 16 << 20 // 16 MiB
	defaultMaxResultBlocks = 1000
)

// Limits bound what one governed call may send to a server and what it
// may bring back. So one hostile or broken call costs neither the hub's
// memory nor the session that the other calls to its server share. Such a
// call may be a model's, or a prompt injection's. The zero value means the
// defaults. A negative field means no limit.
//
// Arguments over a limit are answered with a [ErrLimit] error. This
// happens before the policy, the approver or any hook sees them. So a
// hostile call costs nothing but the measuring. Nothing is sent. The
// other calls of a batch and the session are unaffected. Arguments that
// before-hooks changed are measured again before they are sent.
//
// A result over a limit is answered with a ErrLimit error. It says the
// call was made (the server did its work) but its result is not passed
// on. The session carries on. An error serves a model better than a
// truncated result. The model could take that for the whole.
//
// No message a server sends ends its session, whatever its size. Over
// stdio and HTTP, conduit reads each message below the SDK as it streams.
// That covers JSON bodies, server-sent events and legacy SSE. It holds at
// most max(MaxResultBytes, 16 MiB) of a message. It discards one that is
// longer as it arrives. The request it answers gets the ErrLimit error.
// Every other call to the server goes on over the same session.
//
// A tools/call result under that bound but over MaxResultBytes is refused
// as JSON text. That happens before it is decoded into Go values, which
// can take many times its size. In memory, messages are Go values already
// and are measured as such. A Server given as its own Transport is not
// bounded below the SDK.
type Limits struct {
	// MaxArgDepth bounds how deeply a call's arguments nest. The arguments
	// object is depth 1, and each object or array in it adds one. The
	// default is 64. Real arguments rarely nest past
	// ten. The Go SDK's server (v1.8.0) ends its whole session on a message
	// nested 5,000 deep. Tried by hand, it did so from about 1,000. That
	// fails every call in flight to it. Other servers' parsers may give up
	// sooner.
	MaxArgDepth int
	// MaxArgBytes bounds the size of a call's arguments as JSON text. For
	// arguments given as Go values, it is an estimate that counts strings
	// without their escapes. The default is 1 MiB. A
	// model writes some tens of KiB in a whole response.
	MaxArgBytes int
	// MaxResultBytes bounds one result. It bounds its JSON text as the
	// server sent it, where conduit sees it (see above). It also bounds its
	// content, counting these bytes:
	//
	//   - its text
	//   - its images' and audio's data, as base64
	//   - its embedded resources and resource links
	//   - its structured content as JSON (an estimate, as for arguments)
	//
	// The default is 16 MiB. That is several times
	// what the largest model context holds. It is also the SDK's own bound
	// on one message over stdio.
	MaxResultBytes int
	// MaxResultBlocks bounds the content blocks of one result. The default
	// is 1,000.
	MaxResultBlocks int
}

// limits are Limits resolved: zero means no limit.
type limits struct {
	argDepth, argBytes, resultBytes, resultBlocks int
}

func (l Limits) resolved() limits {
	pick := func(v, def int) int {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	return limits{
		argDepth:     pick(l.MaxArgDepth, defaultMaxArgDepth),
		argBytes:     pick(l.MaxArgBytes, defaultMaxArgBytes),
		resultBytes:  pick(l.MaxResultBytes, defaultMaxResultBytes),
		resultBlocks: pick(l.MaxResultBlocks, defaultMaxResultBlocks),
	}
}

// checkArgs measures a call's arguments as given to CallTool, before they
// are decoded. Raw JSON is scanned, and Go values walked. The error, if
// any, says what is over which limit. It completes "its arguments ...".
func (l *limits) checkArgs(args any) error {
	if l.argDepth == 0 && l.argBytes == 0 {
		return nil
	}
	switch a := args.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return l.checkRaw(len(a), jsonv.RawDepth(a, l.argDepth))
	case []byte:
		return l.checkRaw(len(a), jsonv.RawDepth(a, l.argDepth))
	case string:
		return l.checkRaw(len(a), jsonv.RawDepth(a, l.argDepth))
	}
	m := jsonv.Measure{MaxDepth: l.argDepth, MaxBytes: l.argBytes}
	m.Value(args, 0)
	return l.argsOver(m.Depth, m.Size)
}

func (l *limits) checkRaw(size, depth int) error {
	if l.argBytes > 0 && size > l.argBytes {
		// Size first: a long text is not scanned past the depth limit.
		return l.argsOver(0, size)
	}
	return l.argsOver(depth, 0)
}

func (l *limits) argsOver(depth, size int) error {
	switch {
	case l.argDepth > 0 && depth > l.argDepth:
		return fmt.Errorf("nest deeper than the limit of %d levels", l.argDepth)
	case l.argBytes > 0 && size > l.argBytes:
		return fmt.Errorf("are larger than the limit of %s", transport.ByteSize(l.argBytes))
	}
	return nil
}

// checkResult measures a result. The error, if any, completes "it ...".
// resultOver is the reason of a result over MaxResultBytes.
func (l *limits) resultOver() error {
	return fmt.Errorf("is larger than the limit of %s", transport.ByteSize(l.resultBytes))
}

func (l *limits) checkResult(res *mcp.CallToolResult) error {
	if res == nil {
		return nil
	}
	if l.resultBlocks > 0 && len(res.Content) > l.resultBlocks {
		return fmt.Errorf("has %d content blocks, more than the limit of %d", len(res.Content), l.resultBlocks)
	}
	if l.resultBytes == 0 {
		return nil
	}
	n := 0
	for _, c := range res.Content {
		n += contentSize(c)
		if n > l.resultBytes {
			return l.resultOver()
		}
	}
	if res.StructuredContent != nil {
		m := jsonv.Measure{MaxBytes: l.resultBytes, Size: n}
		m.Value(res.StructuredContent, 0)
		if m.Over {
			return l.resultOver()
		}
	}
	return nil
}

// contentSize is about the bytes of c that a model would be given.
func contentSize(c mcp.Content) int {
	b64 := base64.StdEncoding.EncodedLen
	switch c := c.(type) {
	case *mcp.TextContent:
		return len(c.Text)
	case *mcp.ImageContent:
		return b64(len(c.Data)) + len(c.MIMEType)
	case *mcp.AudioContent:
		return b64(len(c.Data)) + len(c.MIMEType)
	case *mcp.ResourceLink:
		return len(c.URI) + len(c.Name) + len(c.Title) + len(c.Description) + len(c.MIMEType)
	case *mcp.EmbeddedResource:
		if r := c.Resource; r != nil {
			return len(r.URI) + len(r.MIMEType) + len(r.Text) + b64(len(r.Blob))
		}
		return 0
	case nil:
		return 0
	}
	data, _ := json.Marshal(c)
	return len(data)
}

// messageBytes is the bound on one message a server sends, 0 for none. It
// is MaxResultBytes, but never under the SDK's own bound on a line. So a
// small result limit does not refuse a large tool listing. Results over
// MaxResultBytes but under this are refused by the wrapped connection,
// after they are read, before they are decoded.
func (l *limits) messageBytes() int {
	if l.resultBytes == 0 {
		return 0
	}
	return max(l.resultBytes, mcp.DefaultMaxLineLength)
}
