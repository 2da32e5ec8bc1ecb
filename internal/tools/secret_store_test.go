package tools

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const storeSecretText = "API_TOKEN=kept-between-processes\n"

// storeRepo is a repository with a public commit, the directory its
// secret blobs are kept in, and a way to start a new "process" on it.
type storeRepo struct {
	dir, secrets string
	deny         []string
}

func newStoreRepo(t *testing.T) *storeRepo {
	t.Helper()
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add app", write: map[string]string{"app.go": "package app\n"}},
	})
	return &storeRepo{dir: dir, secrets: filepath.Join(t.TempDir(), "secrets")}
}

// process forgets every index of this process, as a new one starts, and
// opens the checkout again.
func (r *storeRepo) process(t *testing.T) *Workspace {
	t.Helper()
	forgetSecretIndexes()
	return r.workspace(t)
}

func (r *storeRepo) workspace(t *testing.T) *Workspace {
	t.Helper()
	return wsNew(t, r.dir, WorkspaceOptions{SecretsDir: r.secrets, Deny: r.deny})
}

// secrets builds ws's set and returns it with the walks of the history
// its index made so far.
func storeSecrets(t *testing.T, ws *Workspace) (*secretBlobs, int) {
	t.Helper()
	set, err := newGitCLI(ws, GitOptions{}).secrets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	x := ws.secrets.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	return set, x.walks
}

// commit adds a commit writing files in the repository.
func (r *storeRepo) commit(t *testing.T, msg string, files map[string]string) string {
	t.Helper()
	return histCommits(t, r.dir, []histCommit{{who: bob, date: "2024-01-11T10:00:00+00:00", msg: msg, write: files}})[msg]
}

// assertRefused fails unless read_file refuses path and search_code does
// not show the secret, a line of the file.
func assertRefused(t *testing.T, ws *Workspace, path, secret string) {
	t.Helper()
	out, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": path})
	if !errors.Is(err, ErrDenied) {
		t.Errorf("read_file %s = %q, %v; want it refused", path, out, err)
	}
	pattern := secret[:len(secret)/2]
	out, err = runGitTool(t, NewSearchCode(ws, Options{}), map[string]any{"pattern": pattern})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ReplaceAll(out, strconv.Quote(pattern), ""), secret) {
		t.Errorf("search_code %q shows the secret:\n%s", pattern, out)
	}
}

// A secret committed and reset away between two processes is reachable
// only through the reflog while HEAD is back on a covered commit. The next
// process must still walk it, with or without a saved index, and so must
// the same process.
func TestSecretResetAwayIsStillSecret(t *testing.T) {
	const secret = "DB_PASSWORD=reset-away-secret\n"
	for _, tc := range []struct {
		name       string
		keep       bool // SecretsDir set
		newProcess bool
	}{
		{"new process, saved index", true, true},
		{"new process, nothing saved", false, true},
		{"same process", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newStoreRepo(t)
			if !tc.keep {
				r.secrets = ""
			}
			ws := r.process(t)
			if set, _ := storeSecrets(t, ws); !set.empty() {
				t.Fatalf("secret blobs before any secret: %v", set.ids)
			}
			r.commit(t, "Add env", map[string]string{".env": secret})
			histGit(t, r.dir, nil, "reset", "-q", "--hard", "HEAD~1")
			wsWriteFiles(t, r.dir, map[string]string{"notes.txt": secret})
			if tc.newProcess {
				ws = r.process(t)
			}
			assertRefused(t, ws, "notes.txt", "DB_PASSWORD=reset-away-secret")
		})
	}
}

// A second process reads the set from the file the first one wrote and
// walks no history; a commit made since is walked, and only it.
func TestSecretIndexKeptBetweenProcesses(t *testing.T) {
	r := newStoreRepo(t)
	r.commit(t, "Add env", map[string]string{".env": storeSecretText})

	set, walks := storeSecrets(t, r.process(t))
	if len(set.ids) != 1 || walks != 1 {
		t.Fatalf("first process: %d secret blobs, %d walks; want 1 and 1", len(set.ids), walks)
	}
	files, err := os.ReadDir(r.secrets)
	if err != nil || len(files) != 1 {
		t.Fatalf("secrets dir holds %v (%v), want one file", files, err)
	}
	for path, want := range map[string]fs.FileMode{r.secrets: 0o700 | fs.ModeDir, filepath.Join(r.secrets, files[0].Name()): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}

	ws := r.process(t)
	set2, walks := storeSecrets(t, ws)
	if walks != 0 || !slices.Equal(set2.sorted, set.sorted) || set2.maxSize != set.maxSize || set2.idLen != set.idLen {
		t.Fatalf("second process: %d walks, set %v; want none and %v", walks, set2.sorted, set.sorted)
	}
	wsWriteFiles(t, r.dir, map[string]string{"notes.txt": storeSecretText})
	assertRefused(t, ws, "notes.txt", "API_TOKEN=kept-between-processes")

	const later = "API_TOKEN=committed-later\n"
	r.commit(t, "Add another env", map[string]string{"svc/.env": later})
	wsWriteFiles(t, r.dir, map[string]string{"later.txt": later})
	ws = r.process(t)
	if set, walks := storeSecrets(t, ws); len(set.ids) != 2 || walks != 1 {
		t.Fatalf("after a new commit: %d secret blobs, %d walks; want 2 and 1", len(set.ids), walks)
	}
	assertRefused(t, ws, "later.txt", "API_TOKEN=committed-later")
	if _, walks := storeSecrets(t, r.process(t)); walks != 0 {
		t.Errorf("after the new commit was saved: %d walks, want none", walks)
	}

	// Nothing is written inside the checkout, .git included.
	before := checkoutFiles(t, r.dir)
	if err := os.RemoveAll(r.secrets); err != nil {
		t.Fatal(err)
	}
	if _, walks := storeSecrets(t, r.process(t)); walks != 1 {
		t.Fatalf("with the file gone: %d walks, want 1", walks)
	}
	if after := checkoutFiles(t, r.dir); !slices.Equal(after, before) {
		t.Errorf("files in the checkout changed:\nbefore %v\nafter  %v", before, after)
	}
}

// checkoutFiles lists every file under dir, .git included, but git's own
// index and logs, which the test's git commands rewrite.
func checkoutFiles(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.IsDir() && !strings.HasPrefix(rel, ".git/objects/") && !strings.HasPrefix(rel, ".git/logs/") &&
			!strings.HasPrefix(rel, ".git/refs/") && rel != ".git/index" && rel != ".git/ORIG_HEAD" && rel != ".git/COMMIT_EDITMSG" {
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// A file that does not check out whole is ignored and the set rebuilt
// from git. Each bad file below claims HEAD covered with no secret blob:
// trusting any of it would let the secret through.
func TestSecretIndexFileIgnored(t *testing.T) {
	rewrite := func(version int, key, sum string) func(t *testing.T, data []byte, sf secretFile) []byte {
		return func(t *testing.T, _ []byte, sf secretFile) []byte {
			sf.IDs, sf.Sizes, sf.MaxSize, sf.IDLen = nil, nil, 0, 0
			if key != "" {
				sf.Key = key
			}
			body, err := json.Marshal(sf)
			if err != nil {
				t.Fatal(err)
			}
			if sum == "" {
				sum = fmt.Sprintf("%x", sha256.Sum256(body))
			}
			return fmt.Appendf(nil, "%s%d %s\n%s", secretFileMagic, version, sum, body)
		}
	}
	for _, tc := range []struct {
		name   string
		mangle func(t *testing.T, data []byte, sf secretFile) []byte
	}{
		{"empty", func(*testing.T, []byte, secretFile) []byte { return nil }},
		{"truncated", func(_ *testing.T, data []byte, _ secretFile) []byte { return data[:len(data)-20] }},
		{"corrupted", func(_ *testing.T, data []byte, _ secretFile) []byte {
			data = slices.Clone(data)
			i := strings.LastIndex(string(data), `"ids":["`) + len(`"ids":["`)
			data[i] ^= 1
			return data
		}},
		{"checksum mismatch", rewrite(secretFileVersion, "", strings.Repeat("0", 64))},
		{"another key", rewrite(secretFileVersion, "/elsewhere/.git\x00", "")},
		{"another version", rewrite(secretFileVersion+1, "", "")},
		{"not a file of ours", func(*testing.T, []byte, secretFile) []byte { return []byte("{}\n{}") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, path, data, sf := savedSecretFile(t)
			if err := os.WriteFile(path, tc.mangle(t, data, sf), 0o600); err != nil {
				t.Fatal(err)
			}

			ws := r.process(t)
			wsWriteFiles(t, r.dir, map[string]string{"notes.txt": storeSecretText})
			assertRefused(t, ws, "notes.txt", "API_TOKEN=kept-between-processes")
			if _, walks := storeSecrets(t, ws); walks != 1 {
				t.Errorf("%d walks, want the history walked again", walks)
			}
			if _, walks := storeSecrets(t, r.process(t)); walks != 0 {
				t.Errorf("the file was not written again whole: %d walks in the next process", walks)
			}
		})
	}
}

// savedSecretFile is a repository with a secret in its history whose
// set a process saved: the file's path, its bytes and its body.
func savedSecretFile(t *testing.T) (r *storeRepo, path string, data []byte, sf secretFile) {
	t.Helper()
	r = newStoreRepo(t)
	r.commit(t, "Add env", map[string]string{".env": storeSecretText})
	ws := r.process(t)
	storeSecrets(t, ws)
	path = ws.secrets.idx.store.path
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(data), "\n")
	if err := json.Unmarshal([]byte(body), &sf); err != nil {
		t.Fatal(err)
	}
	return r, path, data, sf
}

// A file larger than what is read is ignored, not read in part.
func TestSecretIndexFileTooLarge(t *testing.T) {
	r := newStoreRepo(t)
	r.commit(t, "Add env", map[string]string{".env": storeSecretText})
	storeSecrets(t, r.process(t))
	old := secretFileLimit
	secretFileLimit = 64
	t.Cleanup(func() { secretFileLimit = old })
	if _, walks := storeSecrets(t, r.process(t)); walks != 1 {
		t.Errorf("%d walks, want the history walked again", walks)
	}
}

// Another deny-list is another index: it neither reuses nor overwrites
// the file of the first, and a file public under the first is secret
// under the second.
func TestSecretIndexFilePerDenyList(t *testing.T) {
	const private = "internal figures\n"
	r := newStoreRepo(t)
	r.commit(t, "Add figures", map[string]string{"private/figures.txt": private})
	wsWriteFiles(t, r.dir, map[string]string{"public.txt": private})
	ws := r.process(t)
	if out, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": "public.txt"}); err != nil || !strings.Contains(out, "internal figures") {
		t.Fatalf("read_file public.txt under the default deny-list = %q, %v", out, err)
	}

	r.deny = []string{"private/"}
	ws = r.process(t)
	assertRefused(t, ws, "public.txt", "internal figures")
	if _, walks := storeSecrets(t, ws); walks != 1 {
		t.Errorf("%d walks under a new deny-list, want 1", walks)
	}
	if files, err := os.ReadDir(r.secrets); err != nil || len(files) != 2 {
		t.Errorf("secrets dir holds %v (%v), want a file per deny-list", files, err)
	}
}

// A shallow repository's history may grow under a covered commit, so
// nothing is saved for it.
func TestSecretIndexNotSavedWhenShallow(t *testing.T) {
	r := newStoreRepo(t)
	r.commit(t, "Add env", map[string]string{".env": storeSecretText})
	head := strings.TrimSpace(histGit(t, r.dir, nil, "rev-parse", "HEAD"))
	if err := os.WriteFile(filepath.Join(r.dir, ".git", "shallow"), []byte(head+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	storeSecrets(t, r.process(t))
	if files, err := os.ReadDir(r.secrets); len(files) != 0 {
		t.Errorf("secrets dir holds %v (%v), want nothing", files, err)
	}
}

// The tips are the commits of HEAD, the refs and the reflogs, each once:
// tags peeled, refs to blobs and trees left out, none in an empty
// repository.
func TestSecretTips(t *testing.T) {
	empty := t.TempDir()
	histGit(t, empty, nil, "init", "-q")
	if tips, err := newGitCLI(wsNew(t, empty, WorkspaceOptions{}), GitOptions{}).refTips(t.Context()); err != nil || len(tips) != 0 {
		t.Errorf("empty repository: tips %v, %v; want none", tips, err)
	}

	r := newStoreRepo(t)
	first := strings.TrimSpace(histGit(t, r.dir, nil, "rev-parse", "HEAD"))
	gone := r.commit(t, "Reset away", map[string]string{"x.txt": "x\n"})
	histGit(t, r.dir, nil, "reset", "-q", "--hard", "HEAD~1")
	histGit(t, r.dir, []string{"GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com"}, "tag", "-a", "v1", "-m", "v1", first)
	histGit(t, r.dir, nil, "tag", "tree", first+"^{tree}")
	histGit(t, r.dir, nil, "tag", "blob", first+":app.go")
	tips, err := newGitCLI(r.workspace(t), GitOptions{}).refTips(t.Context())
	slices.Sort(tips)
	want := []string{first, gone}
	slices.Sort(want)
	if err != nil || !slices.Equal(tips, want) {
		t.Errorf("tips %v, %v; want %v", tips, err, want)
	}
}

// Without the directory above SecretsDir nothing is saved and nothing is
// created: the set is still worked out, in memory.
func TestSecretIndexNoDataDir(t *testing.T) {
	r := newStoreRepo(t)
	r.commit(t, "Add env", map[string]string{".env": storeSecretText})
	r.secrets = filepath.Join(t.TempDir(), "data", "secrets")
	if set, _ := storeSecrets(t, r.process(t)); len(set.ids) != 1 {
		t.Errorf("%d secret blobs, want 1", len(set.ids))
	}
	if _, err := os.Stat(filepath.Dir(r.secrets)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the data directory was made (%v)", err)
	}
}

// A shallow repository's history can grow under the commits walked: a
// commit covered while the repository was shallow is walked again once
// its history is whole, in the same process as in a new one.
func TestSecretIndexShallowThenDeepened(t *testing.T) {
	const secret = "DEPLOY_KEY=below-the-shallow-line\n"
	for _, newProcess := range []bool{false, true} {
		t.Run(fmt.Sprintf("new process %t", newProcess), func(t *testing.T) {
			origin := newStoreRepo(t)
			histCommits(t, origin.dir, []histCommit{
				{who: bob, date: "2024-01-11T10:00:00+00:00", msg: "Add env", write: map[string]string{".env": secret}},
				{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Drop env", remove: []string{".env"}},
				{who: bob, date: "2024-01-13T10:00:00+00:00", msg: "Add notes", write: map[string]string{"notes.txt": secret}},
			})
			r := &storeRepo{dir: filepath.Join(t.TempDir(), "clone"), secrets: origin.secrets}
			histGit(t, origin.dir, nil, "clone", "-q", "--depth", "1", "file://"+origin.dir, r.dir)
			ws := r.process(t)
			if set, _ := storeSecrets(t, ws); !set.empty() {
				t.Fatalf("the shallow history has no secret, yet the set holds %v", set.ids)
			}
			histGit(t, r.dir, nil, "fetch", "-q", "--unshallow")
			if newProcess {
				ws = r.process(t)
			}
			assertRefused(t, ws, "notes.txt", strings.TrimSpace(secret))
		})
	}
}

// A commit-graph file is a cache of each commit's parents that git trusts
// over the commits themselves; a repository's own can lie. The secret
// blobs come from the commits: a graph that cuts the history short hides
// no secret, neither then nor, through the saved set, after it is gone.
func TestSecretWalkIgnoresCommitGraph(t *testing.T) {
	const secret = "SIGNING_KEY=hidden-by-a-forged-graph\n"
	r := newStoreRepo(t)
	ids := histCommits(t, r.dir, []histCommit{
		{who: bob, date: "2024-01-11T10:00:00+00:00", msg: "Add env", write: map[string]string{".env": secret}},
		{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Drop env", remove: []string{".env"}},
		{who: bob, date: "2024-01-13T10:00:00+00:00", msg: "Add notes", write: map[string]string{"notes.txt": secret}},
	})
	if err := os.RemoveAll(filepath.Join(r.dir, ".git", "logs")); err != nil {
		t.Fatal(err)
	}
	histGit(t, r.dir, nil, "commit-graph", "write", "--reachable")
	graph := filepath.Join(r.dir, ".git", "objects", "info", "commit-graph")
	forgeRootInGraph(t, graph, ids["Drop env"])
	if n := strings.Count(histGit(t, r.dir, nil, "rev-list", "HEAD"), "\n"); n != 2 {
		t.Fatalf("git walks %d commits through the forged graph, want 2", n)
	}
	assertRefused(t, r.process(t), "notes.txt", strings.TrimSpace(secret))
	if err := os.Remove(graph); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, r.process(t), "notes.txt", strings.TrimSpace(secret))
}

// forgeRootInGraph rewrites the commit-graph file at path so that commit
// id has no parent.
func forgeRootInGraph(t *testing.T, path, id string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hashLen := 20
	if len(id) == 64 {
		hashLen = 32
	}
	chunks := map[string]int{}
	for i := range int(b[6]) {
		e := b[8+12*i:]
		chunks[string(e[:4])] = int(binary.BigEndian.Uint64(e[4:12]))
	}
	oidf, oidl, cdat := chunks["OIDF"], chunks["OIDL"], chunks["CDAT"]
	n := int(binary.BigEndian.Uint32(b[oidf+255*4:]))
	for i := range n {
		if hex.EncodeToString(b[oidl+hashLen*i:oidl+hashLen*(i+1)]) == id {
			rec := cdat + (hashLen+16)*i
			binary.BigEndian.PutUint32(b[rec+hashLen:], 0x70000000) // no parent
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("commit %s is not in the graph", id)
}

// A file of secret blobs that someone other than the service could have
// written (in a directory, or itself, writable by group or others) is
// not trusted: its checksum proves it whole, not whose it is.
func TestSecretIndexFileOthersCanWrite(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dir, file os.FileMode
	}{
		{"directory writable by all", 0o777, 0o600},
		{"shared /tmp-like directory", 0o1777, 0o600},
		{"file writable by its group", 0o700, 0o620},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, path, _, sf := savedSecretFile(t)
			// Planted: every commit covered, no secret blob.
			sf.IDs, sf.Sizes, sf.MaxSize, sf.IDLen = nil, nil, 0, 0
			forged, err := json.Marshal(sf)
			if err != nil {
				t.Fatal(err)
			}
			planted := fmt.Appendf(nil, "%s%d %x\n%s", secretFileMagic, secretFileVersion, sha256.Sum256(forged), forged)
			if err := os.WriteFile(path, planted, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.file); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Dir(path), tc.dir); err != nil {
				t.Fatal(err)
			}
			ws := r.process(t)
			wsWriteFiles(t, r.dir, map[string]string{"notes.txt": storeSecretText})
			assertRefused(t, ws, "notes.txt", "API_TOKEN=kept-between-processes")
		})
	}
}
