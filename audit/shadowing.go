package audit

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conduitmcp/conduit"
)

// The cross-server rule's name heuristics: which other server, or which
// tool only another server lists, a text names.

// minProseServerLen is the shortest server id looked for in prose
// ("the notes server"); shorter ones are common words ("web server"),
// looked for only in exposed names (web__fetch).
const minProseServerLen = 4

// auditor holds what the cross-server rule compares with.
type auditor struct {
	tools  map[string]map[string]bool // server -> its tools' names
	owners map[string][]string        // a distinctive tool name -> the servers that list it
	// byWords holds the ids long enough to be looked for in prose ("the
	// gmail server"), by their letters and digits in lower case.
	byWords map[string][]string
}

func newAuditor(servers []conduit.ServerTools) *auditor {
	a := &auditor{tools: map[string]map[string]bool{}, owners: map[string][]string{}, byWords: map[string][]string{}}
	for _, st := range servers {
		names := map[string]bool{}
		for _, t := range st.Tools {
			if t == nil {
				continue
			}
			names[t.Name] = true
			if distinctive(t.Name) && !slices.Contains(a.owners[t.Name], st.Server) {
				a.owners[t.Name] = append(a.owners[t.Name], st.Server)
			}
		}
		a.tools[st.Server] = names
		if w := wordsOf(st.Server); len(st.Server) >= minProseServerLen && !slices.Contains(a.byWords[w], st.Server) {
			a.byWords[w] = append(a.byWords[w], st.Server)
		}
	}
	return a
}

// shadowing reports the first mention in c (prose of server's) of
// another configured server or of a tool only another server lists.
func (a *auditor) shadowing(server, c string) (string, []int) {
	if id, m := a.proseMention(server, c); id != "" {
		return "names another server, " + id, m
	}
	for _, m := range tokens(c) {
		tok := c[m[0]:m[1]]
		if other, tool, ok := a.exposedMention(server, tok); ok {
			return fmt.Sprintf("names the tool %s of another server, %s", tool, other), m
		}
		for _, cand := range candidates(tok) {
			if a.tools[server][cand] {
				continue
			}
			for _, other := range a.owners[cand] {
				if other != server && !related(other, server) {
					return fmt.Sprintf("names the tool %s, which only another server (%s) lists", cand, other), m
				}
			}
		}
	}
	return "", nil
}

// exposedMention reports whether tok names a tool the way a hub exposes
// it, server__tool (with an optional mcp__ or mcp_ in front).
func (a *auditor) exposedMention(server, tok string) (string, string, bool) {
	tok = strings.TrimPrefix(strings.TrimPrefix(tok, "mcp__"), "mcp_")
	s, tool, ok := strings.Cut(tok, "__")
	if !ok || s == server || related(s, server) {
		return "", "", false
	}
	if names, known := a.tools[s]; known && names[tool] {
		return s, tool, true
	}
	return "", "", false
}

// candidates are the tool names a token may be: itself, and what follows
// a separator (server.tool, server/tool, mcp_tool_send).
func candidates(tok string) []string {
	out := []string{tok}
	for _, sep := range []string{"__", ".", "/", "mcp_tool_"} {
		if i := strings.LastIndex(tok, sep); i >= 0 && i+len(sep) < len(tok) {
			out = append(out, tok[i+len(sep):])
		}
	}
	return out
}

// proseMention returns the first server id of a written in c the way
// prose names a server ("the Gmail server", "gmail-mcp", "Brave Search
// tools") other than server (or one related to it), and its span.
func (a *auditor) proseMention(server, c string) (string, []int) {
	if len(a.byWords) == 0 {
		return "", nil
	}
	// The words of c: runs of letters and digits, and whether each is
	// joined to the one before by at most one space, _ or -.
	type word struct {
		start, end int
		joined     bool
	}
	var words []word
	for i := 0; i < len(c); {
		r, size := utf8.DecodeRuneInString(c[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += size
			continue
		}
		start := i
		for i < len(c) {
			r, size := utf8.DecodeRuneInString(c[i:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			i += size
		}
		joined := len(words) > 0 && start-words[len(words)-1].end == 1 && strings.IndexByte(" _-", c[start-1]) >= 0
		words = append(words, word{start, i, joined})
	}
	match := func(letters string, span []int) (string, []int) {
		for _, id := range a.byWords[letters] {
			if id != server && !related(id, server) {
				return id, span
			}
		}
		return "", nil
	}
	for i, w := range words {
		lw := strings.ToLower(c[w.start:w.end])
		for _, sw := range serverWords {
			if !strings.HasSuffix(lw, sw) {
				continue
			}
			// The name within the word ("CircleCIMCP"), then with up to
			// three words before it ("Brave Search server").
			prefix := lw[:len(lw)-len(sw)]
			if prefix != "" {
				if id, span := match(prefix, []int{w.start, w.end}); id != "" {
					return id, span
				}
			}
			name := prefix
			for k := i; k > 0 && k > i-3; k-- {
				if !words[k].joined {
					break
				}
				prev := words[k-1]
				name = strings.ToLower(c[prev.start:prev.end]) + name
				if id, span := match(name, []int{prev.start, w.end}); id != "" {
					return id, span
				}
			}
		}
	}
	return "", nil
}

// serverWords are the words after a server's name in prose.
var serverWords = []string{"mcp", "server", "servers", "tool", "tools"}

// wordsOf is s in lower case without what is not a letter or a digit.
func wordsOf(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// distinctive reports whether a tool name is unlikely to be a word of
// prose: it has a separator or a lower-to-upper case change.
func distinctive(name string) bool {
	if strings.ContainsAny(name, "_-.") {
		return true
	}
	prev := rune(0)
	for _, r := range name {
		if unicode.IsLower(prev) && unicode.IsUpper(r) {
			return true
		}
		prev = r
	}
	return false
}

// related reports whether two server ids name servers of one kind, by
// their first word (github, github_work and github-personal), which may
// name each other's tools: an instance of a server that leaves a tool out
// may still mention it.
func related(a, b string) bool {
	return firstWord(a) == firstWord(b)
}

func firstWord(id string) string {
	if i := strings.IndexAny(id, "_-"); i > 0 {
		return strings.ToLower(id[:i])
	}
	return strings.ToLower(id)
}
