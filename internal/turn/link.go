package turn

import (
	"context"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

// link is the permalink, at the lease's commit, of the one place a
// successful call read (see tools.Ref): the lines read_file showed, the
// range git_blame blamed, the directory list_files listed, the file a
// search found hits in. A call that read several places, read another
// commit than the lease's, or failed links nothing.
func link(ctx context.Context, lease *repos.Lease, res tools.Result) string {
	if res.IsError || len(res.Refs) != 1 {
		return ""
	}
	r := res.Refs[0]
	if r.Commit != "" && r.Commit != lease.Commit {
		return ""
	}
	return lease.Permalink(ctx, r.Path, r.Start, r.End, r.Dir)
}
