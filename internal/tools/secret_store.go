package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// A secretIndex is kept on disk (WorkspaceOptions.SecretsDir) so that a
// fresh process starts from the commits an earlier one covered instead of
// walking the whole history again.
//
// Trusting the covered commits of a file is sound because git names a
// commit by the hash of its content, which includes its parents' ids and
// its tree: a commit id read from the file stands for the same history in
// any repository that has that commit, so the secret blobs the earlier
// process found in it are all there are. A repository at the same path
// replaced by another only makes the set larger (blobs that were secret in
// the old one stay denied). A shallow repository is the exception, as its
// history ends early and may later grow: none is written for one.
//
// One file per index, named after the hash of the index's key, written
// whole to a temporary file and renamed, so a reader sees an old file or a
// new one. Processes writing the same file race harmlessly: each file is
// self-consistent, the last one stays, and the others' work is walked
// again when needed. The checksum catches what a crash or a disk leaves
// behind, so no fsync is needed: a file that does not check out is
// ignored and the set is built again from git, never partly trusted.

// secretFileVersion is the format of the files, part of their name and
// of their first line; a file of another version is ignored.
const secretFileVersion = 1

// secretFileMagic starts a file: the magic and version, then the
// SHA-256 of the JSON body that follows on the next line.
const secretFileMagic = "askrepo secret blobs "

// secretFileLimit bounds what is read of a file: about a million ids.
var secretFileLimit int64 = 64 << 20

// secretFile is the body of a file.
type secretFile struct {
	// Key is the index's key, checked on load: the file name is its
	// hash, and a file at another key's name is not this one.
	Key     string   `json:"key"`
	Covered []string `json:"covered"`
	IDLen   int      `json:"id_len,omitempty"`
	IDs     []string `json:"ids"`
	Sizes   []int64  `json:"sizes"`
	MaxSize int64    `json:"max_size"`
}

// secretStore reads and writes the file of one index.
type secretStore struct {
	path string // "" keeps nothing
	key  string
	log  *slog.Logger
}

func newSecretStore(dir, key string, log *slog.Logger) secretStore {
	if dir == "" {
		return secretStore{}
	}
	sum := sha256.Sum256([]byte(key))
	name := hex.EncodeToString(sum[:]) + ".v" + strconv.Itoa(secretFileVersion)
	return secretStore{path: filepath.Join(dir, name), key: key, log: log}
}

// load returns the covered commits and the set the file holds, or
// nothing when there is no usable file.
func (s secretStore) load() (covered []string, set *secretBlobs) {
	if s.path == "" {
		return nil, nil
	}
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.log.Debug("no saved secret blobs; reading them from git", "file", s.path)
		return nil, nil
	}
	if err == nil {
		defer f.Close()
		err = private(f, filepath.Dir(s.path))
	}
	if err == nil {
		var body []byte
		if body, err = io.ReadAll(io.LimitReader(f, secretFileLimit+1)); err == nil {
			covered, set, err = s.decode(body)
		}
	}
	if err != nil {
		s.log.Info("saved secret blobs ignored; reading them from git", "file", s.path, "err", err)
		return nil, nil
	}
	return covered, set
}

// private says why the open file f, in directory dir, may be someone
// else's than the service's, or nil: a checksum proves a file whole, not
// who wrote it, and a file planted by another user could claim every
// commit covered with no secret blob. The directory must be a real one
// (not a symlink), and neither it nor the file writable by group or
// others. Windows keeps no such bits.
func private(f *os.File, dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	di, err := os.Lstat(dir)
	switch {
	case err != nil:
		return err
	case !di.IsDir():
		return errors.New("its directory is not a directory of its own (a symlink?)")
	case di.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("its directory can be written by others (mode %v); make it 0700", di.Mode().Perm())
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("it can be written by others (mode %v)", fi.Mode().Perm())
	}
	return nil
}

// decode checks a file whole and turns it into an index's content.
func (s secretStore) decode(data []byte) ([]string, *secretBlobs, error) {
	if int64(len(data)) > secretFileLimit {
		return nil, nil, fmt.Errorf("larger than %d MB", secretFileLimit>>20)
	}
	head, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil, nil, errors.New("truncated")
	}
	version, sum, ok := strings.Cut(strings.TrimPrefix(string(head), secretFileMagic), " ")
	if !ok || !strings.HasPrefix(string(head), secretFileMagic) {
		return nil, nil, errors.New("not a file of secret blobs")
	}
	if version != strconv.Itoa(secretFileVersion) {
		return nil, nil, fmt.Errorf("format %q, want %d", version, secretFileVersion)
	}
	if got := sha256.Sum256(body); hex.EncodeToString(got[:]) != sum {
		return nil, nil, errors.New("checksum mismatch (truncated or corrupted)")
	}
	var sf secretFile
	if err := json.Unmarshal(body, &sf); err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	if sf.Key != s.key {
		return nil, nil, errors.New("written for another repository or deny-list")
	}
	for _, c := range sf.Covered {
		if !isObjectID(c, len(c)) {
			return nil, nil, fmt.Errorf("bad commit id %q", c)
		}
	}
	set := &secretBlobs{ids: make(map[string]struct{}, len(sf.IDs)), sizes: map[int64]struct{}{}, idLen: sf.IDLen}
	for _, id := range sf.IDs {
		if !isObjectID(id, sf.IDLen) {
			return nil, nil, fmt.Errorf("bad blob id %q", id)
		}
		set.ids[id] = struct{}{}
	}
	for _, n := range sf.Sizes {
		if n <= 0 {
			return nil, nil, fmt.Errorf("bad blob size %d", n)
		}
		set.sizes[n] = struct{}{}
		set.maxSize = max(set.maxSize, n)
	}
	if set.maxSize != sf.MaxSize {
		return nil, nil, fmt.Errorf("largest size %d, the sizes say %d", sf.MaxSize, set.maxSize)
	}
	set.sort()
	return sf.Covered, set, nil
}

// isObjectID says whether id is a full lower-case SHA-1 or SHA-256 id of
// length n.
func isObjectID(id string, n int) bool {
	if (n != 40 && n != 64) || len(id) != n {
		return false
	}
	return strings.Trim(id, "0123456789abcdef") == ""
}

// save writes the index's content to its file. A failure costs the next
// process a walk, not a secret, so it is logged and otherwise ignored.
// Nothing is saved for a shallow repository (see secretIndex.cover): its
// history may grow under covered commits.
func (s secretStore) save(covered map[string]struct{}, set *secretBlobs) {
	if s.path == "" {
		return
	}
	err := s.write(covered, set)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// The data directory does not exist: a CLI that keeps nothing
		// of its own accord is not made to create it.
		s.log.Debug("secret blobs not saved: no data directory", "file", s.path)
	case err != nil:
		s.log.Warn("could not save the secret blobs; the next process reads them from git again", "file", s.path, "err", err)
	}
}

func (s secretStore) write(covered map[string]struct{}, set *secretBlobs) error {
	sf := secretFile{Key: s.key, Covered: make([]string, 0, len(covered)), IDs: []string{}, Sizes: []int64{}}
	for c := range covered {
		sf.Covered = append(sf.Covered, c)
	}
	if !set.empty() {
		sf.IDLen, sf.IDs, sf.MaxSize = set.idLen, set.sorted, set.maxSize
		for n := range set.sizes {
			sf.Sizes = append(sf.Sizes, n)
		}
	}
	body, err := json.Marshal(sf)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	head := fmt.Sprintf("%s%d %x\n", secretFileMagic, secretFileVersion, sum)
	dir := filepath.Dir(s.path)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(s.path)+".tmp*") // 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a rename, there is nothing left to remove
	if _, err := tmp.WriteString(head); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path)
}
