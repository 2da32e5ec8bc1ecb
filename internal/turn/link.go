package turn

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

// link is the permalink for the file a successful call read, for its
// context line: read_file with the lines it showed, git_blame with the
// lines it blamed, list_files to the directory. Other calls name no one
// file, and a call that failed links nothing.
//
// It decodes the call's arguments and reads read_file's output, which is
// the tools' business: it stays here, alone in this file, until the tools
// report what they read themselves.
func link(ctx context.Context, lease *repos.Lease, call tools.Call, res tools.Result) string {
	if res.IsError {
		return ""
	}
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
		Start  int    `json:"start"`
		End    int    `json:"end"`
		Commit string `json:"commit"`
	}
	if json.Unmarshal(call.Input, &a) != nil {
		return ""
	}
	switch call.Name {
	case tools.ReadFileName:
		if a.Path == "" {
			return ""
		}
		start, end := 0, 0
		if a.Offset > 1 || a.Limit > 0 || strings.Contains(res.Content, "; continue with offset=") {
			start, end = shownLines(res.Content)
		}
		return lease.Permalink(ctx, a.Path, start, end, false)
	case tools.GitBlameName:
		// git_blame may look at another commit; only the turn's own is
		// linked.
		if a.Path == "" || (a.Commit != "" && a.Commit != "HEAD" && (len(a.Commit) < 7 || !strings.HasPrefix(lease.Commit, a.Commit))) {
			return ""
		}
		return lease.Permalink(ctx, a.Path, a.Start, max(a.End, a.Start), false)
	case tools.ListFilesName:
		return lease.Permalink(ctx, a.Path, 0, 0, true)
	}
	return ""
}

// shownLines is the first and last line number of read_file's output,
// whose lines start "N\t"; 0, 0 when it shows none.
func shownLines(out string) (first, last int) {
	for line := range strings.SplitSeq(out, "\n") {
		num, _, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 {
			continue
		}
		if first == 0 {
			first = n
		}
		last = n
	}
	return first, last
}
