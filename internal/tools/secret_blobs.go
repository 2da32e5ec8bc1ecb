package tools

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/askrepo/askrepo/internal/search"
)

// Deny-listing a path keeps a secret file's name out of every tool, but git
// keeps its content as a blob, and a blob has no name of its own: a secret
// renamed to notes.txt, copied there, or renamed there and back, is the same
// blob under a public path, and git_show, git_blame and a pickaxe would show
// it or confirm its text. So the git tools and the readers of the working
// tree also refuse content: every blob that was ever at a denied path, in any
// commit any ref or reflog reaches, is a secret blob under whatever name it
// is found. A secret changed by a single byte is a different blob and is not
// caught; the guarantee is about content that was committed as a secret.

// ErrSecretsUnknown is wrapped when the set of secret blobs could not be
// built (git failed or took too long). The git tools then show no file
// content at all rather than risk showing a secret's.
var ErrSecretsUnknown = errors.New("the history could not be checked for contents that were once secret files, so no file content is shown; try again in a moment")

// secretBlobs is the set of blob ids that were ever at a denied path. It
// is immutable once built and safe for concurrent use; a nil set holds
// nothing (a checkout outside git has no history to hide).
type secretBlobs struct {
	ids map[string]struct{} // full lower-case hex ids
	// sizes are the ids' blob sizes: a working-tree file of any other
	// size cannot be one of them and is not hashed.
	sizes map[int64]struct{}
	// sorted holds the ids in order, for abbreviated ones.
	sorted []string
	// idLen is 40 for SHA-1 repositories, 64 for SHA-256 ones.
	idLen int
	// maxSize is the largest of sizes.
	maxSize int64
}

// has says whether id (a full blob id) is a secret blob.
func (s *secretBlobs) has(id string) bool {
	if s == nil || len(s.ids) == 0 {
		return false
	}
	_, ok := s.ids[strings.ToLower(id)]
	return ok
}

// hasPrefix says whether id, a blob id git abbreviated (or a full one),
// names a secret blob. git abbreviates to a prefix no other object in the
// repository has, so a secret id starting with it is that very blob.
func (s *secretBlobs) hasPrefix(id string) bool {
	if s.empty() || len(id) < 4 || strings.Trim(id, "0") == "" {
		return false
	}
	id = strings.ToLower(id)
	if len(id) == s.idLen {
		return s.has(id)
	}
	i, _ := slices.BinarySearch(s.sorted, id)
	return i < len(s.sorted) && strings.HasPrefix(s.sorted[i], id)
}

// empty says whether there is nothing to check against.
func (s *secretBlobs) empty() bool { return s == nil || len(s.ids) == 0 }

// holds says whether content, as git would store it, is a secret blob.
// A file checked out with CRLF line ends (core.autocrlf, or eol=crlf in
// .gitattributes) is its blob with every LF turned into CRLF, so it is
// also hashed with CRLF turned back into LF, as git would store it.
func (s *secretBlobs) holds(content []byte) bool {
	if s.empty() {
		return false
	}
	if s.holdsExactly(content) {
		return true
	}
	if !s.mayBeCRLF(int64(len(content))) || !bytes.Contains(content, crlf) {
		return false
	}
	return s.holdsExactly(bytes.ReplaceAll(content, crlf, lf))
}

var crlf, lf = []byte("\r\n"), []byte("\n")

// holdsExactly says whether content, byte for byte, is a secret blob.
func (s *secretBlobs) holdsExactly(content []byte) bool {
	if _, ok := s.sizes[int64(len(content))]; !ok {
		return false
	}
	h := s.newHash()
	writeBlobHeader(h, int64(len(content)))
	h.Write(content)
	return s.has(fmt.Sprintf("%x", h.Sum(nil)))
}

// mayBeCRLF says whether a file of size bytes can be a secret blob with
// its LFs turned into CRLFs: at most twice as long as the longest one.
// Files past maxCRLFCheck are only compared as they are.
func (s *secretBlobs) mayBeCRLF(size int64) bool {
	return size <= maxCRLFCheck && size <= 2*s.maxSize
}

// maxCRLFCheck bounds the working-tree files read whole to undo CRLF line
// ends; secret files (keys, env files, credentials) are far smaller.
const maxCRLFCheck = 8 << 20

// holdsReader is holds for a file of the given size, read through r from
// its start.
func (s *secretBlobs) holdsReader(r io.ReaderAt, size int64) (bool, error) {
	if s.empty() {
		return false, nil
	}
	if s.mayBeCRLF(size) {
		buf := make([]byte, size)
		n, err := r.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		return s.holds(buf[:n]), nil
	}
	if _, ok := s.sizes[size]; !ok {
		return false, nil
	}
	h := s.newHash()
	writeBlobHeader(h, size)
	n, err := io.Copy(h, io.NewSectionReader(r, 0, size))
	if err != nil {
		return false, err
	}
	if n != size {
		return false, nil // changed while read: not that content
	}
	return s.has(fmt.Sprintf("%x", h.Sum(nil))), nil
}

func (s *secretBlobs) newHash() hash.Hash {
	if s.idLen == 64 {
		return sha256.New()
	}
	return sha1.New()
}

// writeBlobHeader starts git's object hash of a blob: "blob <size>\x00".
func writeBlobHeader(h hash.Hash, size int64) {
	h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
}

// merge returns a set holding s's ids and extra.
func (s *secretBlobs) merge(extra *secretBlobs) *secretBlobs {
	if extra.empty() {
		return s
	}
	if s.empty() {
		return extra
	}
	out := &secretBlobs{ids: make(map[string]struct{}, len(s.ids)+len(extra.ids)), sizes: map[int64]struct{}{}, idLen: s.idLen}
	for _, src := range []*secretBlobs{s, extra} {
		for id := range src.ids {
			out.ids[id] = struct{}{}
		}
		for n := range src.sizes {
			out.sizes[n] = struct{}{}
		}
		out.maxSize = max(out.maxSize, src.maxSize)
	}
	out.sort()
	return out
}

func (s *secretBlobs) sort() {
	s.sorted = make([]string, 0, len(s.ids))
	for id := range s.ids {
		s.sorted = append(s.sorted, id)
	}
	slices.Sort(s.sorted)
}

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
	tips, err := g.refTips(ctx)
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

// refsOutputLimit bounds the list of refs read; about 800k refs fit.
var refsOutputLimit = 64 << 20

// refTips returns the commits HEAD and every ref point at. A repository
// without commits has none. A list of refs too long to read whole is an
// error: the refs left out could be all that reaches a secret's commit,
// and the set would then miss its blob.
func (g *gitCLI) refTips(ctx context.Context) ([]string, error) {
	out, truncated, err := g.output(ctx, refsOutputLimit, "show-ref", "--head")
	var ge *gitExitError
	if errors.As(err, &ge) && ge.stderr == "" {
		return nil, nil // exit 1: no refs at all
	}
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, fmt.Errorf("the repository has more refs than fit in %d MB", refsOutputLimit>>20)
	}
	var tips []string
	for line := range strings.Lines(string(out)) {
		if id, _, ok := strings.Cut(line, " "); ok && id != "" {
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
		idx = &secretIndex{covered: map[string]struct{}{}}
		secretIndexes.m[key.String()] = idx
	}
	c.idx = idx
	return idx, nil
}

// cover extends the index to the history of tips and returns the set. git
// walks only the commits the index does not cover yet, and the reflogs.
func (x *secretIndex) cover(ctx context.Context, g *gitCLI, tips []string) (*secretBlobs, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
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
	extra, err := g.collectSecrets(ctx, []string{"--reflog", "--stdin"}, in.String())
	if err != nil {
		return nil, err
	}
	x.set = x.set.merge(extra)
	if len(x.covered)+len(fresh) > maxCovered {
		clear(x.covered)
		fresh = tips
	}
	for _, t := range fresh {
		x.covered[t] = struct{}{}
	}
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
	err = g.run(ctx, gitRun{args: argv, stdin: stdin, read: func(r io.Reader) error {
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

// secretSet is the secret blobs for the tools that read the working tree,
// which have no git options of their own.
func (w *Workspace) secretSet(ctx context.Context) (*secretBlobs, error) {
	return newGitCLI(w, GitOptions{}).secrets(ctx)
}

// OpenContent opens rel to show its content, as read_file does: through
// the wall, like Open, and refused as a denied file (ErrDenied) when the
// content is a secret blob, committed once at a denied path and renamed or
// copied here. When the secret blobs cannot be worked out it fails closed
// with ErrSecretsUnknown. Whoever shows or measures a file's content (its
// lines, its length) opens it here.
func (w *Workspace) OpenContent(ctx context.Context, rel string) (*os.File, fs.FileInfo, error) {
	f, fi, err := w.Open(rel)
	if err != nil {
		return nil, nil, err
	}
	if err := w.refuseSecret(ctx, rel, f, fi.Size()); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// refuseSecret returns the error a denied file gets when f, the file
// opened for the path asked, holds a secret blob: a secret committed under
// a public name, or copied to one, is the secret. That is so whether the
// file's bytes hash to the blob or the index says the file was checked
// out from it: git converts a blob as it writes it to the working tree
// (working-tree-encoding in .gitattributes, ident), and the converted
// bytes, which hash to nothing in the set, still read as the secret.
func (w *Workspace) refuseSecret(ctx context.Context, asked string, f io.ReaderAt, size int64) error {
	filter, err := w.secretFilter(ctx)
	if err != nil {
		return err
	}
	return filter.refuse(asked, f, size)
}

// refuse is refuseSecret with the secret blobs already read.
func (r secretFilter) refuse(asked string, f io.ReaderAt, size int64) error {
	if r.staged.holds(r.ws, asked) {
		return deniedError(asked)
	}
	held, err := r.set.holdsReader(f, size)
	if err != nil {
		return fmt.Errorf("read %s: %w", asked, err)
	}
	if held {
		return deniedError(asked)
	}
	return nil
}

// ContentCheck returns what OpenContent would answer for a path, nil or
// its error, without keeping the file open, for checking many paths at
// once (the citations of an answer): the secret blobs are read once, not
// once per path, and only if a path needs them. When they cannot be read,
// every path that opens gets that error.
func (w *Workspace) ContentCheck(ctx context.Context) func(rel string) error {
	var (
		once   sync.Once
		filter secretFilter
		ferr   error
	)
	return func(rel string) error {
		f, fi, err := w.Open(rel)
		if err != nil {
			return err
		}
		defer f.Close()
		once.Do(func() { filter, ferr = w.secretFilter(ctx) })
		if ferr != nil {
			return ferr
		}
		return filter.refuse(rel, f, fi.Size())
	}
}

// secretFilter skips, silently as a denied file, every file a search
// reads whose content is a secret blob.
type secretFilter struct {
	search.FileReader
	set    *secretBlobs
	ws     *Workspace
	staged stagedSet
}

func (r secretFilter) Read(rel string, buf []byte, maxSize int64) ([]byte, search.Skip) {
	if r.staged.holds(r.ws, rel) {
		return buf, search.SkipSilently
	}
	buf, skip := r.FileReader.Read(rel, buf, maxSize)
	if skip == search.NotSkipped && r.set.holds(buf) {
		return buf, search.SkipSilently
	}
	return buf, skip
}

// secretFilter reads what a search must skip: the secret blobs and the
// tracked files checked out from one.
func (w *Workspace) secretFilter(ctx context.Context) (secretFilter, error) {
	set, err := w.secretSet(ctx)
	if err != nil {
		return secretFilter{}, err
	}
	staged, err := w.stagedSecrets(ctx, set)
	if err != nil {
		return secretFilter{}, err
	}
	return secretFilter{set: set, ws: w, staged: staged}, nil
}

// wrap wraps a search's readers in the filter; with no secret blobs they
// are left as they are.
func (f secretFilter) wrap(newReader func() search.FileReader) func() search.FileReader {
	if f.set.empty() {
		return newReader
	}
	return func() search.FileReader {
		r := f
		r.FileReader = newReader()
		return r
	}
}

// stagedSet is the tracked files of the checkout whose index entry is a
// secret blob, by path relative to the checkout. A nil one holds none.
type stagedSet map[string]struct{}

// holds says whether rel, as the model named it, is such a file, itself
// or through the symlinks on its way.
func (s stagedSet) holds(w *Workspace, rel string) bool {
	if len(s) == 0 {
		return false
	}
	r, err := w.Rel(rel)
	if err != nil {
		return false
	}
	if _, ok := s[r]; ok {
		return true
	}
	if target, err := w.resolve(r); err == nil && target != r {
		_, ok := s[target]
		return ok
	}
	return false
}

// stagedCache keeps the last stagedSet of a workspace, for the index and
// secret set it was read from.
type stagedCache struct {
	mu   sync.Mutex
	key  string
	set  *secretBlobs
	list stagedSet
}

// stagedSecrets lists the tracked files whose index blob is in set, once
// per index and set: one ls-files, about 0.1 s on 13k files. Outside git
// there is no index and the set is empty anyway.
func (w *Workspace) stagedSecrets(ctx context.Context, set *secretBlobs) (stagedSet, error) {
	if set.empty() {
		return nil, nil
	}
	git, err := w.Git(ctx)
	if err != nil {
		return nil, nil
	}
	c := &w.staged
	c.mu.Lock()
	defer c.mu.Unlock()
	key := cacheKey(git.GitDir)
	if c.list != nil && c.key == key && c.set == set {
		return c.list, nil
	}
	out, err := lsFiles(ctx, git, "--stage")
	if err != nil {
		return nil, secretsError(err)
	}
	list := stagedSet{}
	// "<mode> <object> <stage>\t<path>"
	for rec := range strings.SplitSeq(out, "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		// A denied name is refused as such already; left out, the set is
		// empty in nearly every checkout, and holds costs nothing.
		if ok && len(f) == 3 && f[0] != "160000" && set.has(f[1]) && !w.Denied(name) {
			list[name] = struct{}{}
		}
	}
	c.key, c.set, c.list = key, set, list
	return list, nil
}
