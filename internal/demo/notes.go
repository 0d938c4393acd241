package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Note is one note of the notes server.
type Note struct {
	ID    string   `json:"id"`
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags,omitempty"`
}

type notesStore struct {
	mu    sync.Mutex
	next  int
	notes []Note
}

func newNotesStore() *notesStore {
	s := &notesStore{next: 4}
	s.notes = []Note{
		{ID: "n1", Title: "Shopping list", Body: "eggs, flour, tomatoes", Tags: []string{"home"}},
		{ID: "n2", Title: "Pasta night", Body: "Try the recipe at https://example.com/recipes/pasta on Friday.", Tags: []string{"food"}},
		{ID: "n3", Title: "Quarterly report", Body: "Draft due Friday; numbers from Ana.", Tags: []string{"work"}},
	}
	return s
}

type addNoteIn struct {
	Title string   `json:"title" jsonschema:"a short title"`
	Body  string   `json:"body" jsonschema:"the note's text"`
	Tags  []string `json:"tags,omitempty" jsonschema:"labels to file the note under"`
}

type addNoteOut struct {
	ID string `json:"id"`
}

type searchNotesIn struct {
	Query string `json:"query" jsonschema:"words to look for in titles, bodies and tags"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most notes to return (default 10)"`
}

type searchNotesOut struct {
	Notes []Note `json:"notes"`
}

type deleteNoteIn struct {
	ID string `json:"id" jsonschema:"the note's id, such as n1"`
}

// NewNotesServer returns the demo's notes server: add_note, search_notes and
// delete_note over an in-memory store seeded with three notes. Each server
// value has its own store.
func NewNotesServer() *mcp.Server {
	st := newNotesStore()
	s := mcp.NewServer(&mcp.Implementation{Name: "conduit-demo-notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "add_note",
		Description: "Add a note. Returns its id.",
	}, func(_ context.Context, _ *mcp.CallToolRequest, in addNoteIn) (*mcp.CallToolResult, addNoteOut, error) {
		if strings.TrimSpace(in.Title) == "" {
			return nil, addNoteOut{}, fmt.Errorf("a note needs a title")
		}
		st.mu.Lock()
		id := fmt.Sprintf("n%d", st.next)
		st.next++
		st.notes = append(st.notes, Note{ID: id, Title: in.Title, Body: in.Body, Tags: in.Tags})
		st.mu.Unlock()
		return text(fmt.Sprintf("Added note %s (%s).", id, in.Title)), addNoteOut{ID: id}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "search_notes",
		Description: "Search the notes. Matches titles, bodies and tags, case-insensitively.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in searchNotesIn) (*mcp.CallToolResult, searchNotesOut, error) {
		limit := in.Limit
		if limit <= 0 {
			limit = 10
		}
		q := strings.ToLower(in.Query)
		out := searchNotesOut{Notes: []Note{}}
		st.mu.Lock()
		for _, n := range st.notes {
			hay := strings.ToLower(n.Title + " " + n.Body + " " + strings.Join(n.Tags, " "))
			if strings.Contains(hay, q) && len(out.Notes) < limit {
				out.Notes = append(out.Notes, n)
			}
		}
		st.mu.Unlock()
		var b strings.Builder
		fmt.Fprintf(&b, "%d note(s) match %q.", len(out.Notes), in.Query)
		for _, n := range out.Notes {
			fmt.Fprintf(&b, "\n%s: %s — %s", n.ID, n.Title, n.Body)
		}
		return text(b.String()), out, nil
	})
	destructive := true
	mcp.AddTool(s, &mcp.Tool{
		Name:        "delete_note",
		Description: "Delete a note by id. This cannot be undone.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in deleteNoteIn) (*mcp.CallToolResult, any, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		i := slices.IndexFunc(st.notes, func(n Note) bool { return n.ID == in.ID })
		if i < 0 {
			return nil, nil, fmt.Errorf("no note has id %q", in.ID)
		}
		n := st.notes[i]
		st.notes = slices.Delete(st.notes, i, i+1)
		return text(fmt.Sprintf("Deleted note %s (%s).", n.ID, n.Title)), nil, nil
	})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
