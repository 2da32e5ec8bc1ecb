package tools

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/askrepo/askrepo/internal/search"
)

// The secret blobs applied to the working tree: the files read_file and
// search_code read are refused or skipped when their content is one.

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

func (r secretFilter) Read(rel string, buf []byte, maxSize int64) ([]byte, bool, search.Skip) {
	if r.staged.holds(r.ws, rel) {
		return buf, false, search.SkipSilently
	}
	text, lent, skip := r.FileReader.Read(rel, buf, maxSize)
	if skip == search.NotSkipped && r.set.holds(text) {
		return text, lent, search.SkipSilently
	}
	return text, lent, skip
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
// per index and set. The listing Files made of the same index already has
// every tracked file's blob; without one it takes one ls-files, about
// 5 ms on 12k files. Outside git there is no index and the set is empty
// anyway.
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
	out, tagged := w.trackedListing(ctx, key)
	if out == "" {
		if out, err = lsFiles(ctx, git, "--stage"); err != nil {
			return nil, secretsError(err)
		}
		tagged = false
	}
	list := stagedSet{}
	// "[<tag> ]<mode> <object> <stage>\t<path>", one per tracked file:
	// read without allocating, as most checkouts have thousands.
	for rec := range strings.SplitSeq(out, "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if tagged {
			_, meta, _ = strings.Cut(meta, " ")
		}
		mode, rest, ok2 := strings.Cut(meta, " ")
		id, _, ok3 := strings.Cut(rest, " ")
		// A denied name is refused as such already; left out, the set is
		// empty in nearly every checkout, and holds costs nothing.
		// git prints ids in lower case, as the set holds them.
		if _, secret := set.ids[id]; secret && ok && ok2 && ok3 && mode != "160000" && !w.Denied(name) {
			list[name] = struct{}{}
		}
	}
	c.key, c.set, c.list = key, set, list
	return list, nil
}

// trackedListing is the tracked files' records of the cached listing when
// it was read from the index key names (tagged: with ls-files -v's tags),
// else "". A listing under way (a search lists its files while it reads
// the secret blobs) is waited for: its records save a git call.
func (w *Workspace) trackedListing(ctx context.Context, key string) (out string, tagged bool) {
	select {
	case w.lock <- struct{}{}:
		defer func() { <-w.lock }()
	case <-ctx.Done():
		return "", false
	}
	if c := w.files; c != nil && c.key == key {
		return c.tracked, c.tagged
	}
	return "", false
}
