package search

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"create_pull_request", []string{"create", "pull", "request"}},
		{"get-file.v2", []string{"get", "file", "v2"}},
		{"browserNavigate", []string{"browser", "navigate", "browsernavigate"}},
		{"parseHTTPRequest", []string{"parse", "http", "request", "parsehttprequest"}},
		{"GitHub", []string{"git", "hub", "github"}},
		{"URL", []string{"url"}},
		{"k8s", []string{"k8s"}},
		{"ÉtéBon", []string{"été", "bon", "étébon"}},
		{"  don't!  ", []string{"don", "t"}},
	} {
		var got []string
		words(tc.in, func(w string) { got = append(got, w) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
