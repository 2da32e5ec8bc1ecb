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

// diffEntry is one file pair of a diff as `--name-status -z` reports it:
// a change to one path, or a rename or copy with both of its paths. Both
// matter for the deny-list: git compares a renamed file with its old
// content, so a pair whose old side is a secret file carries the secret.
type diffEntry struct {
	status byte   // 'A', 'C', 'D', 'M', 'R', 'T', ...
	from   string // the old path of a rename or copy, else ""
	to     string // the path (the new one of a rename or copy)
	// oldBlob and newBlob are the blob ids on each side, read from --raw
	// output (possibly abbreviated, all zeros for no blob); "" from
	// --name-status.
	oldBlob, newBlob string
}

// secret says whether either side of the entry holds a secret blob: a
// secret file's content under a public name.
func (e diffEntry) secret(set *secretBlobs) bool {
	return set.hasPrefix(e.oldBlob) || set.hasPrefix(e.newBlob)
}

// paired says whether the entry joins two paths, a rename or a copy.
func (e diffEntry) paired() bool { return e.from != "" }

// anyDenied says whether either path of the entry is a secret file.
func (e diffEntry) anyDenied(ws *Workspace) bool {
	return ws.Denied(e.to) || (e.paired() && ws.Denied(e.from))
}

// readNameStatus reads one entry of `--name-status -z` or `--raw -z`
// output from toks, the output split at NUL, starting at its status ("M",
// "R087") or raw record (":100644 100644 <old> <new> M"). It returns the
// entry and the tokens it used; ok is false when toks[0] is neither or the
// paths are missing because the output was cut.
func readNameStatus(toks []string) (e diffEntry, used int, ok bool) {
	if len(toks) == 0 {
		return diffEntry{}, 0, false
	}
	st := strings.TrimPrefix(toks[0], "\n")
	if raw, ok := strings.CutPrefix(st, ":"); ok {
		f := strings.Fields(raw)
		if len(f) != 5 {
			return diffEntry{}, 0, false
		}
		e.oldBlob, e.newBlob, st = f[2], f[3], f[4]
	}
	if st == "" || !strings.ContainsRune("ACDMRTUXB", rune(st[0])) || strings.Trim(st[1:], "0123456789") != "" {
		return diffEntry{}, 0, false
	}
	e.status = st[0]
	if e.status == 'R' || e.status == 'C' {
		if len(toks) < 3 {
			return diffEntry{}, 0, false
		}
		e.from, e.to = toks[1], toks[2]
		return e, 3, true
	}
	if len(toks) < 2 {
		return diffEntry{}, 0, false
	}
	e.to = toks[1]
	return e, 2, true
}
