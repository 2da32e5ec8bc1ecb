package tools

import (
	"context"
	"strings"
)

// Rename flags of commitChanges.
const (
	findRenames = "-M"
	noRenames   = "--no-renames"
)

// commitChanges is what changed in a commit, as far as the tools may say.
type commitChanges struct {
	// rename is the rename flag of every diff of the commit. A rename or
	// copy is diffed against its old path's content, so a pair with a
	// secret file, or a secret's content, on either side would print the
	// secret's lines in the patch, and its line counts in the diffstat;
	// such a commit is diffed without renames, each path against its own
	// history. Other commits keep the readable rename.
	rename string
	// shown are the changed paths that are neither denied nor hold a
	// secret blob on either side, when some are (hidden); a denied file
	// is left out of the diffstat as if it were not there, as a citation
	// of it reads like one of a missing file: its name, and its line
	// counts, would tell that a secret changed and by how much.
	shown  []string
	hidden bool
	// split says renames between public files are shown as a deletion
	// and an addition because of a pair with a hidden side, which the
	// output says so that the model does not take them for two changes.
	split bool
	// cut says the file list was too long to read whole: it is taken to
	// hold such a pair, and the diffstat leaves out what the deny-list's
	// patterns can.
	cut bool
}

// changes lists the commit's changed files with their blobs.
func (s *GitShow) changes(ctx context.Context, sha string, secrets *secretBlobs) (commitChanges, error) {
	argv := append([]string{"show", "--format=", "--raw", "-z"}, diffFlags(findRenames)...)
	argv = append(argv, "--end-of-options", sha, "--")
	out, truncated, err := s.git.output(ctx, 1<<20, argv...)
	if err != nil {
		return commitChanges{}, err
	}
	if truncated {
		return commitChanges{rename: noRenames, cut: true, split: true}, nil
	}
	ch := commitChanges{rename: findRenames}
	ws := s.git.ws
	for _, e := range parseNameStatus(out) {
		if e.paired() && (e.anyDenied(ws) || e.secret(secrets)) {
			ch.rename = noRenames
		}
		if e.paired() {
			n := len(ch.shown)
			if ws.Denied(e.from) || secrets.hasPrefix(e.oldBlob) {
				ch.hidden = true
			} else {
				ch.shown = append(ch.shown, e.from)
			}
			if ws.Denied(e.to) || secrets.hasPrefix(e.newBlob) {
				ch.hidden = true
			} else {
				ch.shown = append(ch.shown, e.to)
			}
			ch.split = ch.split || len(ch.shown) == n+2
			continue
		}
		if ws.Denied(e.to) || e.secret(secrets) {
			ch.hidden = true
		} else {
			ch.shown = append(ch.shown, e.to)
		}
	}
	ch.split = ch.split && ch.rename == noRenames
	return ch, nil
}

// statSpecs are the pathspecs of the commit's diffstat: none (the whole
// commit) when nothing is hidden, the shown files one by one when some
// are, and when the list was cut, or is too long for one command line,
// the whole checkout less what the deny-list's patterns exclude. nil
// means there is no file to list.
func (c commitChanges) statSpecs(deny denyList) []string {
	switch {
	case !c.cut && !c.hidden:
		return []string{}
	case !c.cut && len(c.shown) == 0:
		return nil
	case !c.cut && len(c.shown) <= maxDiffFiles:
		specs := make([]string, 0, len(c.shown))
		for _, f := range c.shown {
			specs = append(specs, literalPathspec(f))
		}
		return specs
	}
	return append([]string{"."}, denyExcludes(deny)...)
}

// parseNameStatus reads the entries of `--name-status -z` output.
func parseNameStatus(out []byte) []diffEntry {
	toks := strings.Split(string(out), "\x00")
	var entries []diffEntry
	for i := 0; i < len(toks); {
		e, used, ok := readNameStatus(toks[i:])
		if !ok {
			i++
			continue
		}
		entries = append(entries, e)
		i += used
	}
	return entries
}
