// Package search ranks tools against a query. It uses a field-weighted
// BM25 (BM25F) over each tool's name, title, server, description and
// parameter names. It adds English stemming, common abbreviations and verb
// synonyms. It knows documents by their index. Package conduit maps them
// to tools.
package search

import (
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/kljensen/snowball/english"
)

// The fields of a tool that search reads.
const (
	fieldName = iota
	fieldTitle
	fieldServer
	fieldDesc
	fieldParams
	numFields
)

// bm25f holds the ranking's parameters: per field a weight and a length
// normalization b, and the saturation k1. The bench module has real tool
// lists and queries (BENCHMARKS.md, "Tool search"). On them, the
// parameters move recall little within their plausible ranges. k1 and the
// description's b are the usual values. The rest are a first choice. No
// variation measured improved on it.
var bm25f = struct {
	k1     float64
	weight [numFields]float64
	b      [numFields]float64
}{
	k1:     1.2,
	weight: [numFields]float64{fieldName: 3, fieldTitle: 2, fieldServer: 1.5, fieldDesc: 1, fieldParams: 0.5},
	b:      [numFields]float64{fieldName: 0.5, fieldTitle: 0.5, fieldServer: 0, fieldDesc: 0.75, fieldParams: 0.5},
}

// abbreviations are read as their expansions, in tools and queries alike.
// So "PR" finds pull_request and "repository" finds a repo parameter.
// Keys are lower case. An expansion is analyzed like any text.
var abbreviations = map[string]string{
	"pr":        "pull request",
	"prs":       "pull requests",
	"mr":        "merge request",
	"mrs":       "merge requests",
	"repo":      "repository",
	"repos":     "repositories",
	"k8s":       "kubernetes",
	"kube":      "kubernetes",
	"db":        "database",
	"dbs":       "databases",
	"env":       "environment",
	"envs":      "environments",
	"config":    "configuration",
	"cfg":       "configuration",
	"conf":      "configuration",
	"msg":       "message",
	"msgs":      "messages",
	"dm":        "direct message",
	"dms":       "direct messages",
	"doc":       "document",
	"docs":      "documentation",
	"info":      "information",
	"auth":      "authentication",
	"org":       "organization",
	"orgs":      "organizations",
	"ns":        "namespace",
	"dir":       "directory",
	"dirs":      "directories",
	"img":       "image",
	"imgs":      "images",
	"js":        "javascript",
	"ts":        "typescript",
	"py":        "python",
	"stats":     "statistics",
	"perf":      "performance",
	"pkg":       "package",
	"pkgs":      "packages",
	"dep":       "dependency",
	"deps":      "dependencies",
	"desc":      "description",
	"prod":      "production",
	"svc":       "service",
	"cmd":       "command",
	"exec":      "execute",
	"ls":        "list",
	"rm":        "remove",
	"mv":        "move",
	"mkdir":     "make directory",
	"btn":       "button",
	"nav":       "navigate",
	"screencap": "screenshot",
	"num":       "number",
	"addr":      "address",
	"tz":        "timezone",
	"txn":       "transaction",
	"txns":      "transactions",
	"acct":      "account",
	"kb":        "knowledge base",
	"kv":        "key value",
	"gql":       "graphql",
	"gh":        "github",
	"vm":        "virtual machine",
	"vms":       "virtual machines",
	"pvc":       "persistent volume claim",
	"ci":        "continuous integration",
	"apm":       "application performance monitoring",
	"rum":       "real user monitoring",
	"sso":       "single sign on",
	"mfa":       "multi factor authentication",
	"poi":       "point of interest",
	"pois":      "points of interest",
}

// analyze calls emit with the terms of text:
//
//   - Words are runs of letters and digits.
//   - They are split again at camelCase boundaries. The whole word is kept
//     too, so "GitHub" is github as well as git and hub.
//   - They are lower-cased.
//   - Stop words are dropped.
//   - Abbreviations are expanded.
//   - Words are stemmed with stem.
func analyze(text string, stem func(string) string, emit func(term string)) {
	words(text, func(w string) {
		if exp, ok := abbreviations[w]; ok {
			words(exp, func(e string) {
				if !english.IsStopWord(e) {
					emit(stem(e))
				}
			})
			return
		}
		if !english.IsStopWord(w) {
			emit(stem(w))
		}
	})
}

// Stems maps lower-case words to their stems. The Snowball stemmer
// allocates, and is the most of what indexing costs. Tool descriptions
// repeat their words. Queries mostly use words the tools use.
type Stems map[string]string

// stem stems w, through the cache.
func (c Stems) stem(w string) string {
	st, ok := c[w]
	if !ok {
		st = english.Stem(w, true)
		c[w] = st
	}
	return st
}

// words calls emit with text's words, lower-cased. Words are runs of
// letters and digits. A run that mixes cases gives its camelCase parts as
// well as the whole.
func words(text string, emit func(w string)) {
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += n
			continue
		}
		j := i
		mixed := false
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if !isWordRune(r) {
				break
			}
			if j > i && unicode.IsUpper(r) {
				mixed = true
			}
			j += n
		}
		run := text[i:j]
		if mixed {
			camelParts(run, emit)
		}
		emit(lower(run))
		i = j
	}
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// camelParts calls emit with the parts of a run. It splits at
// lower-to-upper boundaries. It splits before the last capital of a run
// of capitals followed by a lower-case letter. So "parseHTTPRequest" is
// parse, HTTP, Request. It emits nothing when there is no such boundary.
func camelParts(run string, emit func(string)) {
	start, split := 0, false
	var prev rune
	prevUpper := false
	for i, r := range run {
		up := unicode.IsUpper(r)
		cut := -1
		if i > start {
			switch {
			case up && !prevUpper && unicode.IsLetter(prev):
				cut = i
			case unicode.IsLower(r) && prevUpper:
				// "HTTPRequest": the R starts the next part.
				if j := i - utf8.RuneLen(prev); j > start {
					cut = j
				}
			}
		}
		if cut > 0 {
			emit(lower(run[start:cut]))
			start, split = cut, true
		}
		prev, prevUpper = r, up
	}
	if split {
		emit(lower(run[start:]))
	}
}

// lower lower-cases s, without allocating when it is lower case already.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

// Analysis is one tool's terms with their frequency in each field, and
// each field's length. A caller may keep it per tool. Then indexes over
// the same tools analyze a tool once. Examples are a set and its filter,
// or every principal's listing.
type Analysis struct {
	terms []docTerm
	lens  [numFields]float64
}

type docTerm struct {
	term string
	tf   [numFields]uint16 // saturating
}

// maxParams bounds how many parameter names of one schema are read, and
// maxParamDepth how deep.
const (
	maxParams     = 64
	maxParamDepth = 4
)

// Doc is what search reads of a tool.
type Doc struct {
	Name, Title, Server, Description string
	// InputSchema is the tool's input schema as JSON values; its
	// parameter names are indexed.
	InputSchema any
}

// Analyze returns d's analysis, stemming with stems (which it fills).
func Analyze(t Doc, stems Stems) *Analysis {
	d := &Analysis{}
	pos := map[string]int{}
	add := func(field int, text string) {
		analyze(text, stems.stem, func(term string) {
			i, ok := pos[term]
			if !ok {
				i = len(d.terms)
				pos[term] = i
				d.terms = append(d.terms, docTerm{term: term})
			}
			if tf := &d.terms[i].tf[field]; *tf < math.MaxUint16 {
				*tf++
			}
			d.lens[field]++
		})
	}
	add(fieldName, t.Name)
	add(fieldServer, t.Server)
	add(fieldTitle, t.Title)
	add(fieldDesc, t.Description)
	n := 0
	paramNames(jsonv.ObjectOf(t.InputSchema), 0, &n, func(name string) { add(fieldParams, name) })
	return d
}

// paramNames calls emit with the property names of schema and of the
// schemas nested in it. Nested schemas are object properties, array
// items, the branches of anyOf, oneOf and allOf, and definitions. It goes
// breadth first within a level. It emits at most maxParams names, at most
// maxParamDepth levels deep. Names of one schema are visited in sorted
// order. So the result does not depend on map order.
func paramNames(schema map[string]any, depth int, n *int, emit func(string)) {
	if schema == nil || depth >= maxParamDepth {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if *n >= maxParams {
			return
		}
		*n++
		emit(k)
	}
	// An enum's values name what a parameter can say ("closed" of an
	// issue's state).
	if list, ok := schema["enum"].([]any); ok {
		for _, e := range list {
			if s, ok := e.(string); ok && *n < maxParams {
				*n++
				emit(s)
			}
		}
	}
	var nested []map[string]any
	for _, k := range keys {
		if m, ok := props[k].(map[string]any); ok {
			nested = append(nested, m)
		}
	}
	if m, ok := schema["items"].(map[string]any); ok {
		nested = append(nested, m)
	}
	if m, ok := schema["additionalProperties"].(map[string]any); ok {
		nested = append(nested, m)
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		list, _ := schema[kw].([]any)
		for _, e := range list {
			if m, ok := e.(map[string]any); ok {
				nested = append(nested, m)
			}
		}
	}
	for _, kw := range []string{"$defs", "definitions"} {
		defs, _ := schema[kw].(map[string]any)
		names := make([]string, 0, len(defs))
		for k := range defs {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			if m, ok := defs[k].(map[string]any); ok {
				nested = append(nested, m)
			}
		}
	}
	for _, m := range nested {
		// A nested schema's own properties are one level down; a branch
		// of anyOf or an items schema without properties only passes on.
		paramNames(m, depth+1, n, emit)
	}
}

// synonymWeight is how much a synonym of a query's word counts against the
// word itself. nameCoverage is how much a tool's score grows when the
// query matches all of its name. It grows in proportion to the share
// matched.
const (
	synonymWeight = 0.2
	nameCoverage  = 0.5
)

// synonymGroups are words that ask for the same thing, mostly the verbs
// tools are named with. A query's word brings in the others of its groups
// at synonymWeight.
var synonymGroups = [][]string{
	{"create", "add", "new", "make", "insert", "post", "submit", "open"},
	{"delete", "remove", "drop", "erase", "destroy", "purge"},
	{"get", "fetch", "retrieve", "read", "show", "view", "see", "display"},
	{"update", "edit", "modify", "change", "set", "patch", "toggle", "turn"},
	{"search", "find", "query", "lookup", "look"},
	{"run", "execute", "trigger", "start", "launch", "invoke"},
	{"stop", "cancel", "kill", "terminate", "abort", "halt"},
	{"send", "post", "publish", "notify"},
	{"download", "export", "save"},
	{"upload", "attach", "import"},
	{"reply", "respond", "answer"},
	{"close", "resolve", "finish"},
	{"image", "picture", "photo"},
	{"error", "exception", "failure", "crash"},
	{"user", "member", "people", "person"},
}

// synonymStems maps each stem of synonymGroups to the other stems of its
// groups.
var synonymStems = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		var stems []string
		for _, w := range g {
			stems = append(stems, english.Stem(w, true))
		}
		for _, a := range stems {
			for _, b := range stems {
				if a != b && !slices.Contains(m[a], b) {
					m[a] = append(m[a], b)
				}
			}
		}
	}
	return m
})

// Index is the inverted index of one tool set. Each posting carries the
// term's whole BM25F contribution to that tool, so a query only adds.
type Index struct {
	terms    map[string]int32 // term -> id
	postings [][]posting      // by term id
	scratch  sync.Pool        // *searchScratch
	nameLen  []uint8          // by doc: distinct terms of the name

	// stems are the words met while indexing (read-only after). learned
	// are those met by queries since, up to maxLearned.
	stems   Stems
	learned sync.Map // string -> string
	nlearn  atomic.Int32
}

// MaxLearned bounds the stems an index learns from queries, which are
// outside input.
const MaxLearned = 4096

// Learned is how many stems idx learned from queries.
func (idx *Index) Learned() int {
	n := 0
	idx.learned.Range(func(_, _ any) bool { n++; return true })
	return n
}

// stem stems a query's word: from what indexing or earlier queries met,
// or by the stemmer.
func (idx *Index) stem(w string) string {
	if st, ok := idx.stems[w]; ok {
		return st
	}
	if st, ok := idx.learned.Load(w); ok {
		return st.(string)
	}
	st := english.Stem(w, true)
	if idx.nlearn.Add(1) <= MaxLearned {
		// w may be a slice of the caller's query: keep a copy.
		idx.learned.Store(strings.Clone(w), st)
	}
	return st
}

type posting struct {
	doc    int32
	score  float32
	inName bool
}

type searchScratch struct {
	acc     []float64 // by doc
	hits    []uint8   // by doc: name terms matched
	pending []string
	touched []int32 // the docs with a score
	top     []int32 // the best, in order
	seen    []int32 // the query's term ids
}

// NewIndex indexes n documents; analysis returns the i-th one's analysis
// (see Analyze), stemming with stems.
func NewIndex(n int, analysis func(i int, stems Stems) *Analysis) *Index {
	idx := &Index{terms: map[string]int32{}, stems: Stems{}}
	docs := make([]*Analysis, n)
	var avg [numFields]float64
	var df []int32 // by term id
	idx.nameLen = make([]uint8, n)
	for i := range n {
		d := analysis(i, idx.stems)
		docs[i] = d
		for f, l := range d.lens {
			avg[f] += l
		}
		names := 0
		for _, dt := range d.terms {
			id, ok := idx.terms[dt.term]
			if !ok {
				id = int32(len(df))
				idx.terms[dt.term] = id
				df = append(df, 0)
			}
			df[id]++
			if dt.tf[fieldName] > 0 {
				names++
			}
		}
		idx.nameLen[i] = uint8(min(names, math.MaxUint8))
	}
	for f := range avg {
		avg[f] /= float64(n)
	}
	// One array of postings, each term's a slice of it, in doc order.
	idx.postings = make([][]posting, len(df))
	var total int
	for _, n := range df {
		total += int(n)
	}
	flat := make([]posting, 0, total)
	for id, n := range df {
		idx.postings[id] = flat[len(flat) : len(flat) : len(flat)+int(n)]
		flat = flat[:len(flat)+int(n)]
	}
	nd := float64(n)
	for i, d := range docs {
		var norm [numFields]float64
		for f := range norm {
			norm[f] = 1
			if avg[f] > 0 {
				norm[f] = 1 - bm25f.b[f] + bm25f.b[f]*d.lens[f]/avg[f]
			}
		}
		for _, dt := range d.terms {
			var tf float64
			for f, c := range dt.tf {
				if c > 0 {
					tf += bm25f.weight[f] * float64(c) / norm[f]
				}
			}
			id := idx.terms[dt.term]
			k := float64(df[id])
			idf := math.Log(1 + (nd-k+0.5)/(k+0.5))
			idx.postings[id] = append(idx.postings[id], posting{int32(i), float32(idf * tf / (bm25f.k1 + tf)), dt.tf[fieldName] > 0})
		}
	}
	idx.scratch.New = func() any {
		return &searchScratch{acc: make([]float64, n), hits: make([]uint8, n)}
	}
	return idx
}

// Rank returns at most limit of idx's documents that match query, best
// first. result makes each a T from its index and score. limit <= 0 means
// every match. Ties keep the documents' order. Scores are positive. It is
// safe for concurrent use.
func Rank[T any](idx *Index, query string, limit int, result func(doc int, score float64) T) []T {
	s := idx.scratch.Get().(*searchScratch)
	defer idx.scratch.Put(s)
	s.touched, s.seen, s.pending = s.touched[:0], s.seen[:0], s.pending[:0]
	add := func(id int32, w float64) {
		for _, p := range idx.postings[id] {
			if s.acc[p.doc] == 0 {
				s.touched = append(s.touched, p.doc)
			}
			s.acc[p.doc] += w * float64(p.score)
			if p.inName && s.hits[p.doc] < math.MaxUint8 {
				s.hits[p.doc]++
			}
		}
	}
	analyze(query, idx.stem, func(term string) {
		if syns, ok := synonymStems()[term]; ok {
			s.pending = append(s.pending, syns...)
		}
		id, ok := idx.terms[term]
		if !ok || slices.Contains(s.seen, id) {
			return
		}
		s.seen = append(s.seen, id)
		add(id, 1)
	})
	// Synonyms of the query's words, after the words themselves, so that a
	// word the query has does not count twice.
	for _, term := range s.pending {
		id, ok := idx.terms[term]
		if !ok || slices.Contains(s.seen, id) {
			continue
		}
		s.seen = append(s.seen, id)
		add(id, synonymWeight)
	}
	if len(s.touched) == 0 {
		return nil
	}
	// A query that says most of a tool's name names that tool: "create a
	// PR" is create_pull_request before create_pull_request_review.
	for _, d := range s.touched {
		if h := s.hits[d]; h > 0 {
			s.acc[d] *= 1 + nameCoverage*float64(h)/float64(idx.nameLen[d])
		}
	}
	// Best first; ties in the set's order.
	better := func(a, b int32) int {
		switch {
		case s.acc[a] > s.acc[b]:
			return -1
		case s.acc[a] < s.acc[b]:
			return 1
		}
		return int(a - b)
	}
	if limit <= 0 || limit > len(s.touched) {
		limit = len(s.touched)
	}
	ranked := s.touched
	if limit < len(s.touched) && limit <= maxInsertion {
		// Keep the best limit in order, by insertion: a few comparisons
		// per match for the small limits search is used with.
		s.top = s.top[:0]
		for _, d := range s.touched {
			if len(s.top) == limit && better(d, s.top[limit-1]) > 0 {
				continue
			}
			i, _ := slices.BinarySearchFunc(s.top, d, better)
			if len(s.top) < limit {
				s.top = slices.Insert(s.top, i, d)
			} else {
				copy(s.top[i+1:], s.top[i:limit-1])
				s.top[i] = d
			}
		}
		ranked = s.top
	} else {
		slices.SortFunc(s.touched, better)
	}
	out := make([]T, limit)
	for i := range out {
		d := ranked[i]
		out[i] = result(int(d), s.acc[d])
	}
	for _, d := range s.touched {
		s.acc[d] = 0
		s.hits[d] = 0
	}
	return out
}

// maxInsertion is the largest limit ranked by insertion rather than by
// sorting every match.
const maxInsertion = 32
