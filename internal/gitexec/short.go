package gitexec

// ShortCommit is commit abbreviated to the 7 hex digits people read in
// notes, footers and headings. It is for showing a commit, never for naming
// one to git: 7 digits may be ambiguous in a large repository.
func ShortCommit(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}
