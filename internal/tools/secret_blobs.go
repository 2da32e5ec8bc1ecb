package tools

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
	"strings"
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
