package pins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/internal/textsafe"
)

// readableDefinition indents a canonical definition, one member a line. It
// writes the characters a terminal would not show as JSON escapes
// (textsafe.Escape). So a reviewer of a diff sees what the model would
// read.
func readableDefinition(canonical []byte) string {
	if len(canonical) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, canonical, "", "  "); err != nil {
		return string(canonical)
	}
	return textsafe.Escape(b.String())
}

// lineDiff returns a unified diff of two texts, with three lines of
// context, or "" when they are equal.
func lineDiff(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := diffLines(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	const context = 3
	// Group the edits into hunks that share context.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			// A run of equal lines longer than twice the context ends
			// the hunk.
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		aStart, bStart := ops[start].a, ops[start].b
		aLen, bLen := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffOp is one line of a diff: ' ' kept, '-' removed, '+' added. a and b
// are its 0-based positions in the old and the new text.
type diffOp struct {
	kind byte
	line string
	a, b int
}

// maxDiffCells bounds the table of the longest common subsequence. Past it
// the differing middle is shown as removed, then added.
const maxDiffCells = 4 << 20

func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	// Common prefix and suffix first: most changes are small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{' ', a[pre], pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(am), len(bm)
	if n*m > maxDiffCells {
		for i, l := range am {
			ops = append(ops, diffOp{'-', l, pre + i, pre})
		}
		for j, l := range bm {
			ops = append(ops, diffOp{'+', l, pre + n, pre + j})
		}
	} else {
		// lcs[i][j] is the length of the longest common subsequence of
		// am[i:] and bm[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && am[i] == bm[j]:
				ops = append(ops, diffOp{' ', am[i], pre + i, pre + j})
				i++
				j++
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', am[i], pre + i, pre + j})
				i++
			default:
				ops = append(ops, diffOp{'+', bm[j], pre + i, pre + j})
				j++
			}
		}
	}
	for k := suf; k > 0; k-- {
		ops = append(ops, diffOp{' ', a[len(a)-k], len(a) - k, len(b) - k})
	}
	return ops
}
