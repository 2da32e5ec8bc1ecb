package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The set of secret blobs of a repository, built from git's history and
// kept per repository for the life of the process, and between processes
// in WorkspaceOptions.SecretsDir (see secret_store.go).

// secretCache is a workspace's handle on its repository's secretIndex,
// found once.
type secretCache struct {
	mu  sync.Mutex
	idx *secretIndex
}

// secretIndex is the set of secret blobs of one repository (its common git
// directory, shared by all its worktrees) under one deny-list, and the
// commits whose whole history it covers. It only grows: a commit a ref
// moved away from keeps its secrets secret. It is safe for concurrent use.
type secretIndex struct {
	mu      sync.Mutex // held while git extends the set, so it runs once
	covered map[string]struct{}
	set     *secretBlobs
	// store keeps covered and set between processes; loaded says it was
	// read, which happens once, on the index's first use.
	store  secretStore
	loaded bool
	// common is the repository's common git directory.
	common string
	// walks counts the walks of the history, for the tests.
	walks int
	// tips are the last tips git gave (see cachedTips).
	tips tipsCache
}

// maxCovered bounds the commits an index remembers covering; past it, it
// keeps only the latest ones. Forgetting costs time (git walks that
// history again next time), never a secret: the set keeps every id.
const maxCovered = 1000

// secretIndexes holds the index of every repository this process has
// read, so the worktree a sync adds for each new commit extends the set
// with the new commits instead of walking the whole history again.
var secretIndexes = struct {
	sync.Mutex
	m map[string]*secretIndex
}{m: map[string]*secretIndex{}}

// secrets returns the secret blobs of every commit the repository's refs
// and reflogs reach. Outside a git repository, or without git, there is no
// history and the set is empty. Any other failure, a timeout included,
// wraps ErrSecretsUnknown.
func (g *gitCLI) secrets(ctx context.Context) (*secretBlobs, error) {
	return g.secretsOf(ctx, "")
}

// secretsAt is secrets with the history of commit sha too, which no ref
// may reach (a rewritten history, an object fetched but never merged).
func (g *gitCLI) secretsAt(ctx context.Context, sha string) (*secretBlobs, error) {
	return g.secretsOf(ctx, sha)
}

func (g *gitCLI) secretsOf(ctx context.Context, sha string) (*secretBlobs, error) {
	g.ws.secrets.mu.Lock()
	known := g.ws.secrets.idx
	g.ws.secrets.mu.Unlock()
	tips, err := g.cachedTips(ctx, known)
	switch {
	case errors.Is(err, ErrNotGitRepo), errors.Is(err, ErrForeignGitDir), errors.Is(err, exec.ErrNotFound):
		// No history the tools may read: nothing of it to hide either.
		// A refused git directory is another repository's, which the
		// checkout is served without.
		return nil, nil
	case err != nil:
		return nil, secretsError(err)
	}
	if sha != "" {
		tips = append(tips, sha)
	}
	idx, err := g.secretIndex(ctx)
	if err != nil {
		return nil, secretsError(err)
	}
	set, err := idx.cover(ctx, g, tips)
	if err != nil {
		return nil, secretsError(err)
	}
	return set, nil
}

// secretsError wraps a failure to build the set in ErrSecretsUnknown. A
// timeout is said as such: git's own timeout message would ask the model
// to narrow a request that has nothing to narrow.
func secretsError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (git took longer than the call may): %w", ErrSecretsUnknown, context.DeadlineExceeded)
	}
	return fmt.Errorf("%w: %w", ErrSecretsUnknown, err)
}

// refsOutputLimit bounds the list of tips read; about 1.6M commits fit.
var refsOutputLimit = 64 << 20

// refTips returns the commits HEAD, every ref and every reflog entry point
// at, tags peeled, refs to trees and blobs left out, each once. A
// repository without commits has none.
//
// The reflogs are tips too: a secret committed and then reset away is
// reachable only from them, while HEAD is back on a covered commit, and
// the index would never walk it. One git process answers all of it, which
// keeps the warm path (everything covered) to this single call: 2 ms on a
// repository of one commit, about 30 ms for a reflog of 5000 commits,
// where git reads and hashes each commit object.
//
// A list too long to read whole is an error: the tips left out could be
// all that reaches a secret's commit, and the set would then miss its
// blob.
func (g *gitCLI) refTips(ctx context.Context) ([]string, error) {
	out, truncated, err := g.output(ctx, refsOutputLimit, "rev-list", "--no-walk=unsorted", "--all", "--reflog", "--ignore-missing")
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, fmt.Errorf("the repository's refs and reflogs name more commits than fit in %d MB", refsOutputLimit>>20)
	}
	var tips []string
	for line := range strings.Lines(string(out)) {
		if id := strings.TrimSpace(line); id != "" {
			tips = append(tips, id)
		}
	}
	return tips, nil
}

// secretIndex finds the index of the workspace's repository.
func (g *gitCLI) secretIndex(ctx context.Context) (*secretIndex, error) {
	c := &g.ws.secrets
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idx != nil {
		return c.idx, nil
	}
	prefix, common, ok := g.ws.gitLayout(ctx)
	if !ok {
		out, _, err := g.output(ctx, 64<<10, "rev-parse", "--git-common-dir")
		if err != nil {
			return nil, err
		}
		// Relative to the checkout unless git says otherwise (git before
		// 2.31 has no --path-format).
		common = strings.TrimSpace(string(out))
		if !filepath.IsAbs(common) {
			common = filepath.Join(g.ws.Dir(), common)
		}
		if prefix, err = g.prefix(ctx); err != nil {
			return nil, err
		}
	}
	// The deny-list is matched from the checkout's place in the
	// repository, so two checkouts of one repository at different places
	// (or with different lists) each have their own index.
	var key strings.Builder
	key.WriteString(filepath.Clean(common))
	key.WriteString("\x00" + prefix)
	for _, p := range g.ws.deny {
		fmt.Fprintf(&key, "\x00%t %t %s", p.negate, p.anchored, p.glob)
	}
	secretIndexes.Lock()
	defer secretIndexes.Unlock()
	idx := secretIndexes.m[key.String()]
	if idx == nil {
		idx = &secretIndex{covered: map[string]struct{}{}, common: common, store: newSecretStore(g.ws.secretsDir, key.String(), g.ws.log)}
		secretIndexes.m[key.String()] = idx
	}
	c.idx = idx
	return idx, nil
}

// cover extends the index to the history of tips and returns the set. git
// walks only the commits the index does not cover yet, and the reflogs.
// The saved index is read on first use and written after each walk.
func (x *secretIndex) cover(ctx context.Context, g *gitCLI, tips []string) (*secretBlobs, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.loaded {
		x.loaded = true
		covered, set := x.store.load()
		for _, c := range covered {
			x.covered[c] = struct{}{}
		}
		x.set = x.set.merge(set)
	}
	var fresh []string
	for _, t := range tips {
		if _, ok := x.covered[t]; !ok {
			fresh = append(fresh, t)
		}
	}
	if len(fresh) == 0 {
		return x.set, nil
	}
	var in strings.Builder
	for _, t := range fresh {
		in.WriteString(t + "\n")
	}
	for t := range x.covered {
		in.WriteString("^" + t + "\n")
	}
	x.walks++
	// A shallow history ends early and may later grow under the tips:
	// walked while the repository is (or turns) shallow, they are not
	// covered, and are walked again next time.
	shallow := isShallow(x.common)
	extra, err := g.collectSecrets(ctx, []string{"--reflog", "--stdin"}, in.String())
	if err != nil {
		return nil, err
	}
	x.set = x.set.merge(extra)
	if shallow || isShallow(x.common) {
		return x.set, nil
	}
	if len(x.covered)+len(fresh) > maxCovered {
		clear(x.covered)
		fresh = tips
	}
	for _, t := range fresh {
		x.covered[t] = struct{}{}
	}
	x.store.save(x.covered, x.set)
	return x.set, nil
}

// collectSecrets lists every blob at a denied path in the commits revs
// select. git compares each commit with its first parent only, without
// rename pairing: a blob at a denied path in a commit is either new there
// (and listed) or inherited from the first parent, where the same holds,
// down to a root commit, which is compared with nothing and lists all.
//
// git lists every changed path and the deny-list is applied here: limiting
// git with the deny patterns as pathspecs (globs under "**/", icase) made
// it match each of them against every entry of every changed tree, 25
// times slower on a 3000-commit history (2.6 s against 0.1 s).
func (g *gitCLI) collectSecrets(ctx context.Context, revs []string, stdin string) (*secretBlobs, error) {
	set := &secretBlobs{ids: map[string]struct{}{}, sizes: map[int64]struct{}{}}
	if !slices.ContainsFunc(g.ws.deny, func(p denyPattern) bool { return !p.negate }) {
		return set, nil // nothing is denied
	}
	prefix, err := g.prefix(ctx)
	if err != nil {
		return nil, err
	}
	argv := []string{"log", "--no-renames", "--diff-merges=first-parent", "--format=", "--raw", "--no-abbrev", "-z",
		"--no-textconv", "--no-ext-diff", "--no-color", "--ignore-missing"}
	argv = append(argv, revs...)
	argv = append(argv, "--")
	argv = append(argv, ":(top)")
	deny := newDenyIndex(g.ws.deny)
	// The walk reads each commit's parents from the commit itself, not
	// from the repository's commit-graph file: that cache is trusted by
	// git as it is, and one that lies cuts the history short.
	noGraph := [][2]string{{"core.commitGraph", "false"}}
	err = g.run(ctx, gitRun{args: argv, stdin: stdin, config: noGraph, read: func(r io.Reader) error {
		br := bufio.NewReaderSize(r, 64<<10)
		var meta string
		for {
			tok, err := br.ReadString(0)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read git log output: %w", err)
			}
			tok = strings.TrimSuffix(tok, "\x00")
			if meta == "" {
				// A record's start; the path that follows it is
				// taken as it is, even one starting with ":".
				if t := strings.TrimPrefix(tok, "\n"); strings.HasPrefix(t, ":") {
					meta = t
				}
				continue
			}
			f := strings.Fields(meta[1:])
			meta = ""
			// ":<old mode> <new mode> <old id> <new id> <status>"
			if len(f) != 5 || !secretPath(deny, tok, prefix) {
				continue
			}
			for i, id := range f[2:4] {
				if f[i] != "160000" && strings.Trim(id, "0") != "" {
					set.ids[id] = struct{}{}
					set.idLen = len(id)
				}
			}
		}
	}})
	if err != nil {
		return nil, err
	}
	if err := g.blobSizes(ctx, set); err != nil {
		return nil, err
	}
	set.sort()
	return set, nil
}

// secretPath says whether a path git reports (relative to the top of the
// repository) is denied: relative to the checkout when it is inside it,
// else as if the deny-list applied from the top.
func secretPath(deny *denyIndex, name, prefix string) bool {
	if rel, ok := strings.CutPrefix(name, prefix); ok && deny.denied(rel) {
		return true
	}
	return deny.denied(name)
}

// blobSizes asks git the size of every id in set, for the working-tree
// check's first sieve. A blob git no longer has cannot be shown by the git
// tools; its id stays in the set, with no size. The empty blob is taken
// out: it tells nothing, and an empty .env committed once would otherwise
// deny every empty file.
func (g *gitCLI) blobSizes(ctx context.Context, set *secretBlobs) error {
	if len(set.ids) == 0 {
		return nil
	}
	var in strings.Builder
	for id := range set.ids {
		in.WriteString(id)
		in.WriteByte('\n')
	}
	return g.run(ctx, gitRun{
		args:  []string{"cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"},
		stdin: in.String(),
		read: func(r io.Reader) error {
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 3 || f[1] != "blob" {
					continue
				}
				n, err := strconv.ParseInt(f[2], 10, 64)
				switch {
				case err != nil:
				case n == 0:
					delete(set.ids, f[0])
				default:
					set.sizes[n] = struct{}{}
					set.maxSize = max(set.maxSize, n)
				}
			}
			return sc.Err()
		},
	})
}

// isShallow says whether the repository of the common git directory
// common is shallow, or may be: its history ends at grafted commits.
func isShallow(common string) bool {
	_, err := os.Lstat(filepath.Join(common, "shallow"))
	return !errors.Is(err, fs.ErrNotExist)
}
