// Command approvals is a web application whose agent asks a person before
// the calls its policy says "ask", without keeping an HTTP request open
// while the person makes up their mind: the turn is deferred, its state
// saved with the chat, and the person's answer, on a later request (to this
// instance or another one, after a restart or a deploy), resumes it.
//
//	POST /chat      {"prompt": "..."}        -> {"chat": ID, "answer": "..."}
//	                                          or {"chat": ID, "pending": [...]}
//	GET  /pending?chat=ID                    -> {"pending": [...]}
//	POST /approve?chat=ID&call=CALL          -> as /chat
//	POST /deny?chat=ID&call=CALL&reason=...  -> as /chat
//
// Every instance is given the same CONDUIT_STATE_KEY (one or more keys,
// comma-separated, the first sealing) and the same -data directory, where
// each chat is a file: its messages and its conversation's sealed state.
// The claims of approved calls are kept in -data too (store.db, a SQLite
// file): instances of one machine, and restarts, never send a call twice.
// Instances on several machines would share store/redisstore's instead.
//
//	ANTHROPIC_API_KEY=... CONDUIT_STATE_KEY=... go run ./examples/approvals -config mcp.json -data chats
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/store/sqlitestore"
)

func main() {
	configPath := flag.String("config", "mcp.json", "the MCP configuration file (mcpServers and a policy)")
	addr := flag.String("addr", "127.0.0.1:8080", "the address to serve on")
	data := flag.String("data", "chats", "the directory the chats are kept in")
	baseURL := flag.String("base-url", adapters.Anthropic.Wire().BaseURL, "the Anthropic API's base URL")
	model := flag.String("model", "claude-sonnet-4-5", "the Claude model")
	flag.Parse()
	var keys [][]byte
	for _, k := range strings.Split(os.Getenv("CONDUIT_STATE_KEY"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, []byte(k))
		}
	}
	if len(keys) == 0 {
		log.Fatal("set CONDUIT_STATE_KEY to a secret of at least 32 bytes")
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		log.Fatal(err)
	}
	if cfg.Policy == nil {
		log.Fatalf("%s has no policy", *configPath)
	}
	if err := os.MkdirAll(*data, 0o700); err != nil {
		log.Fatal(err)
	}
	// The claims of approved calls, in a file beside the conversations:
	// a call runs once across restarts, and across the instances of one
	// machine (several machines would share store/redisstore's).
	claims, err := sqlitestore.Open(filepath.Join(*data, "store.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer claims.Close()
	// Every "ask" waits for a person: deferred, not waited for.
	hub, err := conduit.NewHub(context.Background(), cfg.Servers, &conduit.Options{Policy: cfg.Policy, LaxPolicy: cfg.LaxPolicy,
		Approver: conduit.DeferAll("waiting for the user's approval"), Store: claims})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	a := &app{hub: hub, dir: *data, keys: keys, base: *baseURL, model: *model, key: os.Getenv("ANTHROPIC_API_KEY"), hc: http.DefaultClient}
	// Stopped (a deploy), it loses nothing: what waits is in the files.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: a.routes()}
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background())
	}()
	log.Printf("serving on http://%s", *addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
	}
}

// app is the web application: a hub, and the chats in a directory.
type app struct {
	hub   *conduit.Hub
	dir   string
	keys  [][]byte
	base  string
	model string
	key   string
	hc    *http.Client
}

// chat is what is kept of a chat between requests: the messages, and the
// conversation's sealed state.
type chat struct {
	Messages []any  `json:"messages"`
	State    []byte `json:"state"`
}

// reply is what every endpoint answers: the model's answer, or the calls
// that wait for the user.
type reply struct {
	Chat    string             `json:"chat"`
	Answer  string             `json:"answer,omitempty"`
	Pending []adapters.Pending `json:"pending,omitempty"`
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /chat", a.newChat)
	mux.HandleFunc("GET /pending", a.pending)
	mux.HandleFunc("POST /approve", func(w http.ResponseWriter, r *http.Request) {
		a.decide(w, r, adapters.Ruling{Allow: true})
	})
	mux.HandleFunc("POST /deny", func(w http.ResponseWriter, r *http.Request) {
		a.decide(w, r, adapters.Ruling{Reason: r.URL.Query().Get("reason")})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	return mux
}

// options are every conversation's: the user, and the keys of its state.
func (a *app) options(user string) *adapters.ConversationOptions {
	return &adapters.ConversationOptions{State: adapters.StateOptions{Keys: a.keys}, TurnOptions: adapters.TurnOptions{Principal: user}}
}

func (a *app) newChat(w http.ResponseWriter, r *http.Request) {
	var in struct{ Prompt string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Prompt == "" {
		http.Error(w, `want {"prompt": "..."}`, http.StatusBadRequest)
		return
	}
	conv, err := adapters.NewConversation(r.Context(), a.hub, adapters.Anthropic, a.options(user(r)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	id := rand.Text()
	a.loop(w, r.Context(), id, conv, []any{adapters.Anthropic.Wire().Prompt(in.Prompt)}, nil)
}

func (a *app) pending(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("chat")
	c, err := a.load(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	saved, err := adapters.ReadState(c.State, &adapters.StateOptions{Keys: a.keys})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, reply{Chat: id, Pending: saved.Pending})
}

// decide resumes a chat with the user's decision on one call.
func (a *app) decide(w http.ResponseWriter, r *http.Request, d adapters.Ruling) {
	id, call := r.URL.Query().Get("chat"), r.URL.Query().Get("call")
	c, err := a.load(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	// The state says for whom it is; an altered one is refused here.
	conv, err := adapters.ResumeConversation(r.Context(), a.hub, adapters.Anthropic, c.State, a.options(user(r)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	exec, err := conv.Resume(r.Context(), map[string]adapters.Ruling{call: d})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.loop(w, r.Context(), id, conv, c.Messages, exec)
}

// maxTurns bounds the requests to the model of one HTTP request.
const maxTurns = 10

// loop is the agent loop, from a turn that exec answered (nil: from the
// messages): it sends the messages, runs the calls of each response, and
// stops at the model's answer, or at calls that wait for the user, saving
// the chat then.
func (a *app) loop(w http.ResponseWriter, ctx context.Context, id string, conv *adapters.Conversation, messages []any, exec *adapters.Execution) {
	wire := adapters.Anthropic.Wire()
	for range maxTurns {
		if exec != nil {
			if !exec.Complete() {
				if err := a.save(id, conv, messages); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				writeJSON(w, http.StatusAccepted, reply{Chat: id, Pending: exec.Pending})
				return
			}
			messages = append(messages, wire.Answers(exec.Results)...)
			if exec.Halted {
				a.finish(w, id, conv, messages, "(the user stopped the agent)")
				return
			}
		}
		resp, err := a.post(ctx, wire.Request(toolcall.Request{Model: a.model, Tools: conv.Tools(), Conversation: messages}))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		turn, err := wire.Turn(resp)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		messages = append(messages, turn.Items...)
		if !turn.ToolUse {
			a.finish(w, id, conv, messages, turn.Text)
			return
		}
		if exec, err = conv.Execute(ctx, resp); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	a.finish(w, id, conv, messages, fmt.Sprintf("(no answer after %d turns)", maxTurns))
}

// finish saves the chat and answers with the model's answer.
func (a *app) finish(w http.ResponseWriter, id string, conv *adapters.Conversation, messages []any, answer string) {
	if err := a.save(id, conv, messages); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, reply{Chat: id, Answer: answer})
}

func (a *app) post(ctx context.Context, body map[string]any) (map[string]any, error) {
	wire := adapters.Anthropic.Wire()
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, wire.Endpoint(a.base, a.model), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	wire.Authorize(req.Header, a.key)
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the model's API: %s: %s", resp.Status, raw)
	}
	var out map[string]any
	return out, json.Unmarshal(raw, &out)
}

// save keeps the chat: its messages and the conversation's state, in a
// file replaced whole.
func (a *app) save(id string, conv *adapters.Conversation, messages []any) error {
	state, err := conv.State()
	if err != nil {
		return err
	}
	data, err := json.Marshal(chat{Messages: messages, State: state})
	if err != nil {
		return err
	}
	tmp := filepath.Join(a.dir, id+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(a.dir, id+".json"))
}

func (a *app) load(id string) (*chat, error) {
	if id == "" || strings.ContainsAny(id, `/\.`) {
		return nil, errors.New("no such chat")
	}
	data, err := os.ReadFile(filepath.Join(a.dir, id+".json"))
	if err != nil {
		return nil, errors.New("no such chat")
	}
	var c chat
	return &c, json.Unmarshal(data, &c)
}

// user is who asks: a real application takes it from its session.
func user(r *http.Request) string {
	if u := r.Header.Get("X-User"); u != "" {
		return u
	}
	return "anonymous"
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
