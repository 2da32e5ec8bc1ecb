package repos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
)

// TestLeaseCite checks an answer against a cloned checkout at the lease's
// commit: what exists is linked at that commit, what does not is flagged
// and left unlinked, and a commit pushed later changes nothing for a lease
// taken before it.
func TestLeaseCite(t *testing.T) {
	up := newRemote(t)
	first := up.commit("main", map[string]string{"pay/retry.go": "package pay\n\nfunc Retry() {}\n"})
	m := newManager(t, []Spec{{Name: "payments", URL: up.URL, Channels: []string{"*"},
		WebURL: "https://git.acme.test/acme/payments", WebKind: "gitea"}}, Options{DataDir: t.TempDir()})
	l, err := m.Acquire(t.Context(), "payments")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	// A later commit adds the file the answer will cite; the lease must
	// still judge by the first commit.
	up.commit("main", map[string]string{"pay/new.go": "package pay\n"})
	if err := m.SyncNow(t.Context(), "payments"); err != nil {
		t.Fatal(err)
	}

	answer := "Retries live in pay/retry.go:3, and the limit is in pay/new.go:1; see pay/retry.go:40."
	out, valid, invalid, err := l.Cite(t.Context(), answer)
	if err != nil {
		t.Fatal(err)
	}
	if valid != 1 || invalid != 2 {
		t.Errorf("valid, invalid = %d, %d; want 1, 2\n%s", valid, invalid, out)
	}
	for _, want := range []string{
		"[pay/retry.go:3](https://git.acme.test/acme/payments/src/commit/" + first + "/pay/retry.go#L3)",
		"pay/new.go:1 ⚠️ _(not in repo@" + first[:7] + ")_",
		"pay/retry.go:40 ⚠️ _(line 40 is past the end: 3 lines)_",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("answer lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "](") != 1 {
		t.Errorf("want exactly one link, got:\n%s", out)
	}
}

// TestLeaseCiteWithoutGit checks a local path that is not a git checkout:
// citations are judged against its files, and without a web view nothing
// is linked.
func TestLeaseCiteWithoutGit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, []Spec{{Name: "tool", Path: dir, Channels: []string{"*"}}}, Options{})
	l, err := m.Acquire(t.Context(), "tool")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	out, valid, invalid, err := l.Cite(t.Context(), "It starts at main.go:3, not at cmd/run.go:9.")
	if err != nil {
		t.Fatal(err)
	}
	want := "It starts at main.go:3, not at cmd/run.go:9 ⚠️ _(not in the repository)_."
	if out != want || valid != 1 || invalid != 1 {
		t.Errorf("Cite = %q, %d, %d\nwant  %q, 1, 1", out, valid, invalid, want)
	}
}

// TestLeasePermalink covers the permalink shape of every kind of host, as
// configured or derived from the remote, for files, line ranges and
// directories.
func TestLeasePermalink(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name        string
		remote      string
		webURL      string
		kind        string
		path        string
		start, end  int
		dir         bool
		want        string
		wantNoLinks bool
	}{
		{name: "github range", remote: "git@github.com:acme/pay.git", path: "a/b.go", start: 3, end: 9,
			want: "https://github.com/acme/pay/blob/" + sha + "/a/b.go#L3-L9"},
		{name: "github dir", remote: "https://github.com/acme/pay.git", path: "a/", dir: true,
			want: "https://github.com/acme/pay/tree/" + sha + "/a"},
		{name: "gitlab line", remote: "https://gitlab.com/acme/pay.git", path: "./a/b.go", start: 7,
			want: "https://gitlab.com/acme/pay/-/blob/" + sha + "/a/b.go#L7"},
		{name: "bitbucket range", remote: "https://bitbucket.org/acme/pay.git", path: "a/b.go", start: 1, end: 2,
			want: "https://bitbucket.org/acme/pay/src/" + sha + "/a/b.go#lines-1:2"},
		{name: "gitea configured", webURL: "https://code.acme.test/acme/pay", kind: "gitea", path: "a/b c.go",
			want: "https://code.acme.test/acme/pay/src/commit/" + sha + "/a/b%20c.go"},
		{name: "outside the repository", remote: "https://github.com/acme/pay.git", path: "../etc/passwd", wantNoLinks: true},
		{name: "no web view", remote: "file:///srv/pay.git", path: "a/b.go", start: 1, wantNoLinks: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manager{}
			r := &repo{remote: tc.remote, spec: Spec{WebURL: tc.webURL, WebKind: tc.kind}}
			m.log = newLogger(&logtest.Buffer{})
			l := &Lease{Commit: sha, Web: m.webView(r)}
			got := l.Permalink(t.Context(), tc.path, tc.start, tc.end, tc.dir)
			if tc.wantNoLinks {
				if got != "" {
					t.Errorf("Permalink = %q, want none", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("Permalink = %q\nwant        %q", got, tc.want)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	m := routingManager(t)
	for _, tc := range []struct{ text, repo, question string }{
		{"what is this?", "docs", "what is this?"},
		{"in secret: show me", "secret", "show me"},
		{"In Infra, where?", "infra", "where?"},
	} {
		repo, q, err := m.Choose(tc.text)
		if err != nil || repo != tc.repo || q != tc.question {
			t.Errorf("Choose(%q) = %q, %q, %v; want %q, %q", tc.text, repo, q, err, tc.repo, tc.question)
		}
	}
	if _, _, err := m.Choose("in nowhere: x"); err == nil || !strings.Contains(err.Error(), "docs, payments, infra, secret") {
		t.Errorf("Choose of an unknown repo: %v, want the list of all repos", err)
	}
}

// TestLeaseCiteHidesDeniedFiles cites secrets every way a hostile answer
// might: the file itself, a file in a denied directory, a symlink to a
// secret, paths out of the checkout. Each must read exactly like a file
// that is not there: no line count, no "past the end", no other words.
func TestLeaseCiteHidesDeniedFiles(t *testing.T) {
	up := newRemote(t)
	for name, target := range map[string]string{"notes.txt": ".env", "vault": "secrets", "passwd": "/etc/passwd", "up": "../.."} {
		if err := os.Symlink(target, filepath.Join(up.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	sha := up.commit("main", map[string]string{
		"README.md":       "hello\n",
		".env":            "TOKEN=secret\n",
		"secrets/db.yaml": "user: a\npassword: b\n",
		"deploy/id_rsa":   "-----BEGIN-----\n",
		// The secret's content under a public name is the secret.
		"config/app.txt": "TOKEN=secret\n",
	})
	m := newManager(t, []Spec{{Name: "app", URL: up.URL, Channels: []string{"*"}, Deny: []string{"secrets/"},
		WebURL: "https://github.com/acme/app"}}, Options{DataDir: t.TempDir()})
	l, err := m.Acquire(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()

	// Each hostile citation is judged next to one of a path that does not
	// exist and has the same shape: the two must be indistinguishable.
	tests := []struct{ cite, absent string }{
		{".env:7", "nope.env:7"},
		{".env:1", "nope.env:1"},
		{"`.env`", "`nope.env`"},
		{"app/.env:7", "app/nope.env:7"},
		{"secrets/db.yaml:7", "nothere/db.yaml:7"},
		{"secrets/db.yaml:1", "nothere/db.yaml:1"},
		{"`secrets/`", "`nothere/`"},
		{"secrets/:1", "nothere/:1"},
		{"deploy/id_rsa:3", "deploy/nope:3"},
		{"notes.txt:7", "nope.txt:7"},
		{"notes.txt:1", "nope.txt:1"},
		{"vault/db.yaml:9", "nothere/db.yaml:9"},
		{"vault/:1", "nothere/:1"},
		{"passwd/x.go:1", "nothere/x.go:1"},
		{"up/etc/passwd:1", "nothere/etc/passwd:1"},
		{"../x.go:1", "nothere/x.go:1"},
		{"../../etc/passwd:1", "nothere/etc/passwd:1"},
		{"/etc/passwd:1", "/nothere/passwd:1"},
		{".git/config:1", "nothere/config:1"},
		{"config/app.txt:7", "config/nope.txt:7"},
		{"config/app.txt:1", "config/nope.txt:1"},
	}
	flag := "⚠️ _(not in repo@" + sha[:7] + ")_"
	for _, tt := range tests {
		t.Run(tt.cite, func(t *testing.T) {
			got, err := l.Check(t.Context(), "See "+tt.cite+" here.")
			if err != nil {
				t.Fatal(err)
			}
			want, err := l.Check(t.Context(), "See "+tt.absent+" here.")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || len(want) != 1 {
				t.Fatalf("found %d and %d citations, want 1 each", len(got), len(want))
			}
			g, w := got[0], want[0]
			if g.Valid != w.Valid || g.Exists != w.Exists || g.Dir != w.Dir || g.Lines != w.Lines ||
				g.URL != w.URL || g.Reason != w.Reason || g.Skipped != w.Skipped || g.Err != nil {
				t.Errorf("%s reads differently from %s:\n got %+v\nwant %+v", tt.cite, tt.absent, g, w)
			}
			out, _, _, err := l.Cite(t.Context(), "See "+tt.cite+" here.")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "](") || !w.Skipped && !strings.Contains(out, flag) {
				t.Errorf("Cite = %q; want it unlinked and, unless skipped, flagged %q", out, flag)
			}
		})
	}
	// A file that does exist is still linked.
	if out, valid, _, _ := l.Cite(t.Context(), "README.md:1"); valid != 1 {
		t.Errorf("README.md:1 = %q, want it linked", out)
	}
}

// TestLeaseCiteLocalCheckout follows a local checkout from clean to dirty
// to a commit that was never pushed. Its files are what the tools read, so
// citations are checked against them; a citation is linked only when its
// file is the commit's and the commit is on the remote, and the notes say
// why the others are not.
func TestLeaseCiteLocalCheckout(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"README.md": "one\ntwo\n", "main.go": "package main\n\nfunc main() {}\n"})
	dir := filepath.Join(t.TempDir(), "app")
	gitexectest.Git(t, filepath.Dir(dir), "clone", "--quiet", up.URL, dir)
	m := newManager(t, []Spec{{Name: "app", Path: dir, Channels: []string{"*"}, WebURL: "https://github.com/acme/app"}}, Options{})
	cite := func(answer string) (Checked, *Lease) {
		t.Helper()
		l, err := m.Acquire(t.Context(), "app")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Release)
		c, err := l.CheckAnswer(t.Context(), answer)
		if err != nil {
			t.Fatal(err)
		}
		return c, l
	}
	answer := "See README.md:3, main.go:3 and new.go:1."

	c, l := cite(answer)
	pushed := l.Commit
	blob := "https://github.com/acme/app/blob/" + pushed + "/"
	want := "See README.md:3 ⚠️ _(line 3 is past the end: 2 lines)_, [main.go:3](" + blob + "main.go#L3) and new.go:1 ⚠️ _(not in repo@" + pushed[:7] + ")_."
	if c.Markdown != want || len(c.Notes) != 0 {
		t.Errorf("clean checkout:\n got %q %q\nwant %q, no notes", c.Markdown, c.Notes, want)
	}

	// Uncommitted: README.md grows, new.go appears. Both are checked as
	// they are on disk, and neither is linked at a commit that lacks them.
	gitexectest.WriteFiles(t, dir, map[string]string{"README.md": "one\ntwo\nthree\n", "new.go": "package main\n"})
	c, l = cite(answer)
	want = "See README.md:3, [main.go:3](" + blob + "main.go#L3) and new.go:1."
	note := "uncommitted changes in cited files: lines may differ from " + pushed[:7]
	if c.Markdown != want || c.Valid != 3 || strings.Join(c.Notes, "|") != note {
		t.Errorf("dirty checkout:\n got %q %d %q\nwant %q 3 %q", c.Markdown, c.Valid, c.Notes, want, note)
	}
	// A context line links what a tool read only when it is the commit's.
	if p := l.Permalink(t.Context(), "README.md", 1, 3, false); p != "" {
		t.Errorf("Permalink of a changed file = %q, want none", p)
	}
	if p, want := l.Permalink(t.Context(), "main.go", 1, 3, false), blob+"main.go#L1-L3"; p != want {
		t.Errorf("Permalink of an unchanged file = %q, want %q", p, want)
	}

	// Committed but not pushed: nothing is linked, context lines included.
	gitexectest.Git(t, dir, "add", "-A")
	gitexectest.Git(t, dir, "commit", "--quiet", "-m", "local")
	c, l = cite(answer)
	if l.Commit == pushed {
		t.Fatal("the lease did not move to the local commit")
	}
	want = "See README.md:3, main.go:3 and new.go:1."
	note = "local commit " + l.Commit[:7] + " is not pushed; citations are checked but not linked"
	if c.Markdown != want || c.Valid != 3 || strings.Join(c.Notes, "|") != note {
		t.Errorf("unpushed commit:\n got %q %d %q\nwant %q 3 %q", c.Markdown, c.Valid, c.Notes, want, note)
	}
	if p := l.Permalink(t.Context(), "main.go", 3, 3, false); p != "" {
		t.Errorf("Permalink of an unpushed commit = %q, want none", p)
	}

	// Pushed: linked again, at the new commit.
	gitexectest.Git(t, dir, "push", "--quiet", "origin", "HEAD:main")
	c, l = cite(answer)
	if !strings.Contains(c.Markdown, "[new.go:1](https://github.com/acme/app/blob/"+l.Commit+"/new.go#L1)") || len(c.Notes) != 0 {
		t.Errorf("pushed commit: got %q %q, want new.go linked and no notes", c.Markdown, c.Notes)
	}
}

// TestLeaseCiteLocalRunsNoFilter checks that comparing a checkout's files
// with its commit runs nothing the checkout configures: git status would
// run a clean filter named in .git/config on a file whose stat changed.
func TestLeaseCiteLocalRunsNoFilter(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"main.go": "package main\n", ".gitattributes": "* filter=own\n"})
	dir := filepath.Join(t.TempDir(), "app")
	gitexectest.Git(t, filepath.Dir(dir), "clone", "--quiet", up.URL, dir)
	marker := filepath.Join(t.TempDir(), "ran")
	gitexectest.Git(t, dir, "config", "filter.own.clean", "touch "+marker+"; cat")
	gitexectest.Git(t, dir, "config", "filter.own.smudge", "cat")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "main.go"), future, future); err != nil {
		t.Fatal(err)
	}
	gitexectest.WriteFiles(t, dir, map[string]string{"main.go": "package main\n\n// changed\n"})
	m := newManager(t, []Spec{{Name: "app", Path: dir, Channels: []string{"*"}, WebURL: "https://github.com/acme/app"}}, Options{})
	l, err := m.Acquire(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	c, err := l.CheckAnswer(t.Context(), "main.go:3")
	if err != nil {
		t.Fatal(err)
	}
	if c.Valid != 1 || len(c.Notes) != 1 {
		t.Errorf("got %q %q, want main.go:3 valid and one note", c.Markdown, c.Notes)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("checking citations ran the checkout's clean filter")
	}
}

// Checking an answer's citations reads the secret blobs once, not once
// per cited path: twenty citations cost one git show-ref, not twenty.
func TestLeaseCheckReadsSecretsOnce(t *testing.T) {
	up := newRemote(t)
	files := map[string]string{".env": "TOKEN=x\n"}
	var answer strings.Builder
	for i := range 20 {
		name := fmt.Sprintf("f%02d.go", i)
		files[name] = "package f\n"
		fmt.Fprintf(&answer, "See %s:1. ", name)
	}
	up.commit("main", files)
	dir := filepath.Join(t.TempDir(), "app")
	gitexectest.Git(t, filepath.Dir(dir), "clone", "--quiet", up.URL, dir)
	m := newManager(t, []Spec{{Name: "app", Path: dir, Channels: []string{"*"}}}, Options{})
	l, err := m.Acquire(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	calls := gitexectest.LogCalls(t)
	c, err := l.CheckAnswer(t.Context(), answer.String())
	if err != nil {
		t.Fatal(err)
	}
	if c.Valid != 20 {
		t.Fatalf("%d valid citations, want 20: %q", c.Valid, c.Markdown)
	}
	if n := strings.Count(strings.Join(calls(), "\n"), " show-ref"); n > 1 {
		t.Errorf("checking 20 citations ran git show-ref %d times, want at most once", n)
	}
}

// A path checkout below the top of its repository checks its citations at
// its own paths and links them at the repository's: a clean one is not
// reported dirty, and its links carry its place in the repository.
func TestLeaseCiteSubdirectoryCheckout(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"sub/main.go": "package main\n\nfunc main() {}\n", "top.go": "package top\n"})
	dir := filepath.Join(t.TempDir(), "app")
	gitexectest.Git(t, filepath.Dir(dir), "clone", "--quiet", up.URL, dir)
	m := newManager(t, []Spec{{Name: "app", Path: filepath.Join(dir, "sub"), Channels: []string{"*"}, WebURL: "https://github.com/acme/app"}}, Options{})
	l, err := m.Acquire(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	c, err := l.CheckAnswer(t.Context(), "See main.go:3.")
	if err != nil {
		t.Fatal(err)
	}
	want := "See [main.go:3](https://github.com/acme/app/blob/" + l.Commit + "/sub/main.go#L3)."
	if c.Markdown != want || len(c.Notes) != 0 {
		t.Errorf("subdirectory checkout:\n got %q %q\nwant %q, no notes", c.Markdown, c.Notes, want)
	}
}
