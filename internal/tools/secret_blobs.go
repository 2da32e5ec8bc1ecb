package tools

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
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
func (s *secretBlobs) holds(content []byte) bool {
	if s.empty() {
		return false
	}
	if _, ok := s.sizes[int64(len(content))]; !ok {
		return false
	}
	h := s.newHash()
	writeBlobHeader(h, int64(len(content)))
	h.Write(content)
	return s.has(fmt.Sprintf("%x", h.Sum(nil)))
}

// holdsReader is holds for a file of the given size, read through r from
// its start.
func (s *secretBlobs) holdsReader(r io.ReaderAt, size int64) (bool, error) {
	if s.empty() {
		return false, nil
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

// secretCache keeps a workspace's set while its refs stay where they were.
type secretCache struct {
	mu  sync.Mutex // held while building, so concurrent calls build once
	key string
	set *secretBlobs
}

// secrets returns the secret blobs of every commit the repository's refs
// and reflogs reach, built once per state of the refs. Outside a git
// repository, or without git, there is no history and the set is empty.
// Any other failure, a timeout included, wraps ErrSecretsUnknown.
func (g *gitCLI) secrets(ctx context.Context) (*secretBlobs, error) {
	c := &g.ws.secrets
	c.mu.Lock()
	defer c.mu.Unlock()
	key, err := g.refsKey(ctx)
	switch {
	case errors.Is(err, ErrNotGitRepo), errors.Is(err, exec.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, secretsError(err)
	}
	if c.set != nil && c.key == key {
		return c.set, nil
	}
	set, err := g.collectSecrets(ctx, []string{"--all", "--reflog"})
	if err != nil {
		return nil, secretsError(err)
	}
	c.key, c.set = key, set
	return set, nil
}

// secretsAt returns the secret blobs for showing commit sha: those of
// secrets, and those of its own history where refs do not reach it (a
// commit only a dangling object or an old pack still holds).
func (g *gitCLI) secretsAt(ctx context.Context, sha string) (*secretBlobs, error) {
	set, err := g.secrets(ctx)
	if err != nil {
		return nil, err
	}
	extra, err := g.collectSecrets(ctx, []string{sha, "--not", "--all", "--reflog"})
	if err != nil {
		return nil, secretsError(err)
	}
	return set.merge(extra), nil
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

// refsKey names the state of HEAD and every ref. No refs at all (a
// repository without commits) is a state too.
func (g *gitCLI) refsKey(ctx context.Context) (string, error) {
	out, _, err := g.output(ctx, 64<<20, "show-ref", "--head")
	var ge *gitExitError
	if errors.As(err, &ge) && ge.stderr == "" {
		return "", nil // exit 1, nothing to show
	}
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(out)
	return string(h[:]), nil
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
func (g *gitCLI) collectSecrets(ctx context.Context, revs []string) (*secretBlobs, error) {
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
	err = g.run(ctx, gitRun{args: argv, read: func(r io.Reader) error {
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
			tok = strings.TrimPrefix(strings.TrimSuffix(tok, "\x00"), "\n")
			if strings.HasPrefix(tok, ":") {
				meta = tok
				continue
			}
			if meta == "" {
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

// refuseSecret returns the error a denied file gets when f, the file
// opened for the path asked, holds a secret blob: a secret committed under
// a public name, or copied to one, is the secret.
func (w *Workspace) refuseSecret(ctx context.Context, asked string, f io.ReaderAt, size int64) error {
	set, err := w.secretSet(ctx)
	if err != nil {
		return err
	}
	held, err := set.holdsReader(f, size)
	if err != nil {
		return fmt.Errorf("read %s: %w", asked, err)
	}
	if held {
		return deniedError(asked)
	}
	return nil
}

// secretFilter skips, silently as a denied file, every file a search
// reads whose content is a secret blob.
type secretFilter struct {
	fileReader
	set *secretBlobs
}

func (r secretFilter) read(rel string, buf []byte, maxSize int64) ([]byte, skipKind) {
	buf, skip := r.fileReader.read(rel, buf, maxSize)
	if skip == notSkipped && r.set.holds(buf) {
		return buf, skipSilently
	}
	return buf, skip
}

// withSecretFilter wraps a search's readers in secretFilter; with no
// secret blobs they are left as they are.
func withSecretFilter(newReader func() fileReader, set *secretBlobs) func() fileReader {
	if set.empty() {
		return newReader
	}
	return func() fileReader { return secretFilter{fileReader: newReader(), set: set} }
}
