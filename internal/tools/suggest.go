package tools

import (
	"context"
	"path"
	"slices"
	"strings"
)

// Limits on the work of suggesting a path: the edit distances cost the
// product of two lengths per file, and a repository has tens of thousands
// of files. A path over maxSuggestLen is no typo; paths are compared by
// their last suggestTail bytes, where the file name is.
const (
	maxSuggestLen = 1024
	suggestTail   = 128
)

// suggestPaths returns up to n paths from files that the model may have
// meant by the missing path want: the same path in another case, the same
// file name in another directory, the name without its extension, or a
// name a typo or two away. Closer kinds of match come first. It gives up
// (with no suggestion) when ctx ends.
func suggestPaths(ctx context.Context, want string, files []string, n int) []string {
	if len(want) > maxSuggestLen {
		return nil
	}
	type cand struct {
		path  string
		score int
		dist  int
	}
	lw := strings.ToLower(want)
	wbase := path.Base(lw)
	maxDist := max(1, len(wbase)/3)
	var cands []cand
	for i, f := range files {
		if i%256 == 0 && ctx.Err() != nil {
			return nil
		}
		lf := strings.ToLower(f)
		base := path.Base(lf)
		score := -1
		switch {
		case lf == lw:
			score = 0
		case base == wbase:
			score = 1
		case strings.HasPrefix(base, wbase+"."):
			score = 2
		default:
			if absInt(len(base)-len(wbase)) > maxDist {
				continue
			}
			if d := editDistance(base, wbase, maxDist); d <= maxDist {
				score = 2 + d
			}
		}
		if score >= 0 {
			cands = append(cands, cand{path: f, score: score})
		}
	}
	// Among equals, prefer the path closest to what was asked, so
	// "src/mian.go" suggests "src/main.go" before "test/main.go".
	for i := range cands {
		if i%256 == 0 && ctx.Err() != nil {
			return nil
		}
		cands[i].dist = editDistance(tail(strings.ToLower(cands[i].path)), tail(lw), 1<<30)
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.score != b.score {
			return a.score - b.score
		}
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.path, b.path)
	})
	out := make([]string, 0, n)
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.path)
	}
	return out
}

// editDistance is the edit distance of a and b in bytes, giving up with a
// value over limit as soon as every path through the row exceeds it.
func editDistance(a, b string, limit int) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// tail returns the last suggestTail bytes of s.
func tail(s string) string { return s[max(0, len(s)-suggestTail):] }

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
