package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/internal/redact"
)

// Environment variables in configuration values: ${env:NAME}, VS Code's
// syntax. So a secret stays in the environment and the file can be shared.
// One expander serves every value that takes it: a server's url, headers
// and env. The values it read are kept with the server. So errors that
// would print them print ${env:NAME} instead.

// ErrEnvNotSet is the cause of a configuration error for a ${env:NAME}
// whose variable is not set. errors.Is(err, ErrEnvNotSet) reports it.
var ErrEnvNotSet = errors.New("is not set")

// envValue is a value read from the environment by a configuration.
type envValue struct{ name, value string }

// ExpandEnv returns s with each ${env:NAME} replaced by the environment
// variable's value, as the configuration's values are (see Parse). It is
// for a value given elsewhere. An example is a command-line flag whose
// secret must not sit in the process's arguments. Its errors
// (ErrEnvNotSet among them) name the variable, never a value.
func ExpandEnv(s string) (string, error) {
	x := &envExpander{lookup: os.LookupEnv}
	return x.expand(s)
}

// envExpander expands ${env:NAME} in configuration values with lookup
// (os.LookupEnv). It remembers what it read. It remembers the
// ${input:ID} of VS Code it left as written.
type envExpander struct {
	lookup func(string) (string, bool)
	read   []envValue
	inputs []string
}

// secrets returns the values x read, by variable name (Server.FromEnv),
// or nil when it read none.
func (x *envExpander) secrets() map[string]string {
	if len(x.read) == 0 {
		return nil
	}
	m := make(map[string]string, len(x.read))
	for _, v := range x.read {
		m[v.name] = v.value
	}
	return m
}

// expand returns s with each ${env:NAME} replaced by the variable's
// value. The text around a reference is kept ("Bearer ${env:GH_TOKEN}").
// A value is not expanded again, and there is no escape, as in VS Code.
// So a value cannot hold the literal text ${env:...}. NAME is letters,
// digits and _, not starting with a digit. An error names the variable,
// never a value. The errors are:
//
//   - a variable that is not set (an empty one is its value);
//   - a reference without its closing brace;
//   - a malformed name.
//
// Other ${...} are kept as written, VS Code's ${input:ID} among them.
// Those are recorded in inputs, since conduit has no prompt for them.
func (x *envExpander) expand(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "${env:"):
		case strings.HasPrefix(s, "${input:"):
			if id, _, ok := strings.Cut(s[len("${input:"):], "}"); ok && !slices.Contains(x.inputs, redact.Name(id)) {
				x.inputs = append(x.inputs, redact.Name(id))
			}
			fallthrough
		default:
			// Not ours: VS Code's ${workspaceFolder} and the like, or text.
			b.WriteString("${")
			s = s[2:]
			continue
		}
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", errors.New(`"${env:" is not closed by "}"`)
		}
		name := s[len("${env:"):end]
		if !envName.MatchString(name) {
			return "", fmt.Errorf(`${env:%s}: a variable's name is letters, digits and _, not starting with a digit`, redact.Name(name))
		}
		v, ok := x.lookup(name)
		if !ok {
			return "", fmt.Errorf("${env:%s} %w", name, ErrEnvNotSet)
		}
		if !slices.Contains(x.read, envValue{name, v}) {
			x.read = append(x.read, envValue{name, v})
		}
		b.WriteString(v)
		s = s[end+1:]
	}
}

// expandMap expands every value of m in place; key names the map in
// errors ("headers").
func (x *envExpander) expandMap(key string, m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v, err := x.expand(m[k])
		if err != nil {
			return fmt.Errorf("%s: %q: %w", key, k, err)
		}
		m[k] = v
	}
	return nil
}

// writtenSecrets warns of the secrets a configuration writes in the file
// instead of reading them with ${env:NAME}. where names the place: a
// server, or a principal's credentials for one. A written secret is a
// non-empty value without ${env: of one of these:
//
//   - a header that carries credentials (Authorization,
//     Proxy-Authorization, Cookie, X-API-Key, X-Auth-Token...);
//   - a variable named like one (GITHUB_TOKEN, OPENAI_API_KEY,
//     DB_PASSWORD...).
//
// A value with a ${...} reference is left to the expander. The warnings
// name the key, never the value.
func writtenSecrets(where string, headers, env map[string]string) []string {
	var out []string
	check := func(what string, m map[string]string, secret func(string) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if v := m[k]; v != "" && !strings.Contains(v, "${") && secret(k) {
				out = append(out, fmt.Sprintf("%s: %s %q is written in the file: keep the secret in an environment variable and write ${env:NAME} in its place", where, what, k))
			}
		}
	}
	check("header", headers, redact.CredentialHeader)
	check("env", env, redact.CredentialVar)
	return out
}

// inputWarnings warns of the ${input:ID} of VS Code that server id's
// values hold, which conduit sends as written.
func inputWarnings(id string, inputs []string) []string {
	var out []string
	for _, in := range inputs {
		out = append(out, fmt.Sprintf("server %q: ${input:%s} is VS Code's prompt, which conduit does not have: it is sent as written; set an environment variable and write ${env:NAME} in its place", id, in))
	}
	return out
}
