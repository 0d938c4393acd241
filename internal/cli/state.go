package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/atomicfile"
	"github.com/conduitmcp/conduit/internal/seal"
)

// A conversation's state, kept in a file between runs (exec --state, and
// resume). It is the saved state of an adapters.Conversation. It is
// encrypted and authenticated with the CLI's key.

// stateKeyEnv holds the keys of saved states, comma-separated. The first
// seals. A key is rotated by putting the new one first.
const stateKeyEnv = "CONDUIT_STATE_KEY"

// stateKeyFile is the key file, under the configuration directory, used
// when stateKeyEnv is not set.
const stateKeyFile = "state.key"

// stateKeys returns the keys of saved states: stateKeyEnv's, or the key
// file's. The key file is created on first use. It also returns where the
// keys come from, for messages.
func stateKeys(env *Env) (keys [][]byte, source string, err error) {
	if list := env.Getenv(stateKeyEnv); strings.TrimSpace(list) != "" {
		keys, err := seal.ParseSecrets(list)
		if err != nil {
			return nil, "", inputError("%s: %v", stateKeyEnv, err)
		}
		return keys, stateKeyEnv, nil
	}
	path, err := stateKeyPath()
	if err != nil {
		return nil, "", failure("no key for saved state: set %s, or a home directory for %s (%v)", stateKeyEnv, stateKeyFile, err)
	}
	key, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if key, err = makeKeyFile(path); err == nil {
			fmt.Fprintf(env.Stderr, "conduit: created the key of saved states, %s (%s, if set, takes its place)\n", path, stateKeyEnv)
		}
	}
	if err != nil {
		return nil, "", failure("the key of saved states: %v (set %s, or fix the key file)", err, stateKeyEnv)
	}
	return [][]byte{key}, fmt.Sprintf("the key file %s (%s is not set)", path, stateKeyEnv), nil
}

// stateKeyPath is the key file: conduit/state.key under the user's
// configuration directory, where conduit keeps its OAuth tokens too.
func stateKeyPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "conduit", stateKeyFile), nil
}

// readKeyFile reads a key file, refusing one that others may read.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o, open to other users: run chmod 600 on it", path, perm)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	key := []byte(strings.TrimSpace(string(data)))
	if len(key) < seal.MinSecret {
		return nil, fmt.Errorf("%s holds %d bytes; a key is at least %d", path, len(key), seal.MinSecret)
	}
	return key, nil
}

// makeKeyFile writes a new random key, readable by its owner only.
func makeKeyFile(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	b := make([]byte, 32)
	rand.Read(b)
	key := []byte(hex.EncodeToString(b))
	if err := atomicfile.WriteFile(path, append(key, '\n'), 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

// readState reads a state file; ok is false when there is none yet.
func readState(path string) (state []byte, ok bool, err error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, inputError("reading the state: %v", err)
	}
	return []byte(strings.TrimSpace(string(data))), true, nil
}

// writeState saves conv's state to path, readable by its owner only: it
// holds the calls' arguments and answers.
func writeState(path string, conv *adapters.Conversation) error {
	state, err := conv.State()
	if err != nil {
		return failure("saving the state: %v", err)
	}
	if err := atomicfile.WriteFile(path, append(state, '\n'), 0o600); err != nil {
		return failure("saving the state: %v", err)
	}
	return nil
}

// stateError is the exit error of a state that cannot be resumed, which
// says why and what to do.
func (st *stateRun) stateError(err error) error {
	path := st.path
	switch {
	case errors.Is(err, adapters.ErrStateExpired):
		return inputError("%s: the state has expired (states live %v): start a new conversation", path, adapters.DefaultStateTTL)
	case errors.Is(err, adapters.ErrStateOtherKey):
		return inputError("%s: the state was sealed under a key not in %s: set %s to the key that saved it (keys separated by commas, the one to seal with first); nothing was sent",
			path, st.keySource, stateKeyEnv)
	case errors.Is(err, adapters.ErrStateAltered):
		return inputError("%s: the state was altered: it fails authentication under %s; nothing was sent", path, st.keySource)
	case errors.Is(err, adapters.ErrStateTruncated):
		return inputError("%s: the state is truncated (the file was cut short); nothing was sent", path)
	case errors.Is(err, adapters.ErrStateMalformed):
		return inputError("%s: not a saved conduit state: %v", path, err)
	case errors.Is(err, adapters.ErrInvalidState):
		return inputError("%s: %v", path, err)
	}
	return inputError("%s: %v", path, err)
}

// stateRun is one command's state file. It holds the keys and the state the
// file held (nil for a new conversation). It holds the lock on the file
// while the command runs.
type stateRun struct {
	path      string
	keys      [][]byte
	keySource string // where keys come from, for messages
	saved     []byte
	info      *adapters.SavedState
	lock      string
}

// openStateFlag opens exec's --state FILE, when given. It locks the file and
// reads it. It checks that the flags agree with the conversation it holds.
func openStateFlag(env *Env, fs *flagSet, path string, p adapters.Provider, l *listFlags, c *callFlags, sf *searchFlags) (*stateRun, error) {
	if path == "" {
		return &stateRun{}, nil
	}
	st, err := openState(env, path)
	if err != nil || st.saved == nil {
		return st, err
	}
	fail := func(err error) (*stateRun, error) { st.unlock(); return nil, err }
	switch info := st.info; {
	case info.Provider != p:
		return fail(usageError(fs.cmd, "%s holds a conversation with %s: --provider %s", path, info.Provider, info.Provider))
	case len(info.Pending) > 0:
		return fail(inputError("%s has calls waiting for a decision (%s): decide them first with 'conduit resume --state %s --allow ID,... --deny ID,...'",
			path, pendingIDs(info.Pending), path))
	case l.principal != "" && l.principal != info.Principal:
		return fail(usageError(fs.cmd, "%s holds a conversation for %q: --principal is not given again", path, info.Principal))
	case c.taint != "":
		return fail(usageError(fs.cmd, "%s holds the conversation's taint: --taint is not given again", path))
	case sf.revealed != "":
		return fail(usageError(fs.cmd, "%s holds the tools searches revealed: --revealed is not given again", path))
	}
	return st, nil
}

// openState locks the state file at path and reads it, if it exists.
func openState(env *Env, path string) (*stateRun, error) {
	keys, source, err := stateKeys(env)
	if err != nil {
		return nil, err
	}
	st := &stateRun{path: path, keys: keys, keySource: source}
	if err := st.lockFile(); err != nil {
		return nil, err
	}
	saved, ok, err := readState(path)
	if err == nil && ok {
		st.saved = saved
		st.info, err = adapters.ReadState(saved, &adapters.StateOptions{Keys: keys})
		if err != nil {
			err = st.stateError(err)
		}
	}
	if err != nil {
		st.unlock()
		return nil, err
	}
	return st, nil
}

// lockFile takes the lock of the state file, FILE.lock. One command at a
// time continues a conversation. So two resumes of one file never both send
// a call. A lock left by a command that died stays, for a person to look.
// Whether that command sent its calls is unknown.
func (st *stateRun) lockFile() error {
	lock := st.path + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return failure("%s is in use by another conduit command (%s exists); if none is running, one died during its turn, which may have sent calls: check, then remove %s", st.path, lock, lock)
	}
	if err != nil {
		return failure("locking the state: %v", err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Close()
	st.lock = lock
	return nil
}

func (st *stateRun) unlock() {
	if st != nil && st.lock != "" {
		os.Remove(st.lock)
		st.lock = ""
	}
}

// conversation is the conversation of the state, or a new one.
func (st *stateRun) conversation(ctx context.Context, src conduit.Source, p adapters.Provider, o *adapters.ConversationOptions) (*adapters.Conversation, error) {
	if st.saved == nil {
		conv, err := adapters.NewConversation(ctx, src, p, o)
		if err != nil {
			return nil, failure("listing tools: %v", err)
		}
		return conv, nil
	}
	o.Principal, o.Taint = "", nil
	conv, err := adapters.ResumeConversation(ctx, src, p, st.saved, o)
	if err != nil {
		return nil, st.stateError(err)
	}
	return conv, nil
}

// save writes conv's state to the file, when there is one.
func (st *stateRun) save(conv *adapters.Conversation) error {
	if st.path == "" {
		return nil
	}
	return writeState(st.path, conv)
}

func pendingIDs(ps []adapters.Pending) string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return strings.Join(ids, ", ")
}
