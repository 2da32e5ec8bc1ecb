package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/termsafe"
	"github.com/askrepo/askrepo/internal/tools"
)

// toolRepo is a committed checkout with a definition, its uses, a secret,
// and a file whose text would move a terminal's cursor if printed raw.
func toolRepo(t *testing.T) string {
	t.Helper()
	r := gitexectest.Init(t, "")
	r.Commit(gitexectest.Commit{Write: map[string]string{
		"README.md":        "# Widget\n\nWidget turns sprockets into widgets.\n",
		"retry/backoff.go": "package retry\n\n// Backoff doubles the wait.\nfunc Backoff(n int) int { return 1 << n }\n",
		"retry/use.go":     "package retry\n\nvar first = Backoff(1)\n",
		"evil.txt":         "Backoff \x1b[2J\x1b]0;pwned\x07 here\n",
		".env":             "SECRET=hunter2\n",
	}, Force: true})
	return r.Dir
}

// runBot runs the bot's command line as main does, and returns what it
// printed and its exit status.
func runBot(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if _, ok := env["BOT_DATA_DIR"]; !ok {
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["BOT_DATA_DIR"] = t.TempDir() // not ./data of the package
	}
	var out, errOut bytes.Buffer
	err := run(t.Context(), args, envMap(env), strings.NewReader(""), &out, &errOut)
	code = exitCode(&errOut, err)
	return out.String(), errOut.String(), code
}

func TestToolCommand(t *testing.T) {
	repo := toolRepo(t)
	other := toolRepo(t)
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf("repos:\n  - name: alpha\n    path: %s\n    channels: [\"*\"]\n  - name: beta\n    path: %s\n    channels: [\"*\"]\n", repo, other))
	configured := map[string]string{"BOT_CONFIG": cfgFile, "BOT_DATA_DIR": t.TempDir()}
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		code     int
		want     string // all of stdout; "" checks nothing
		contains []string
		stderr   string // part of stderr
	}{
		{
			name: "find_symbol through the index",
			args: []string{"tool", "--repo", repo, "find_symbol", `{"name":"Backoff"}`},
			want: "1 definition\n\nretry/backoff.go:4  func  func Backoff(n int) int { return 1 << n }\n    Backoff doubles the wait.\n",
		},
		{
			name: "find_references, REPO_PATH, flags after the arguments",
			env:  map[string]string{"REPO_PATH": repo},
			args: []string{"tool", "find_references", `{"name":"Backoff"}`, "-v"},
			want: "2 references to \"Backoff\" in 2 files\n\nretry/backoff.go\n  4 [def]: func Backoff(n int) int { return 1 << n }\nretry/use.go\n  3: var first = Backoff(1)\n",
		},
		{
			name:     "a repository of BOT_CONFIG by name",
			env:      configured,
			args:     []string{"tool", "--in", "beta", "repo_map"},
			contains: []string{"Map of the repository: ", "most referenced first", "retry/backoff.go (1 ref)\n  func Backoff(n int) int { return 1 << n }\n"},
		},
		{
			name:     "text from the repository is escaped",
			args:     []string{"tool", "--repo", repo, "search_code", `{"pattern":"Backoff \\x1b","include":"*.txt"}`},
			contains: []string{"evil.txt:1: Backoff "},
		},
		{
			name:   "a tool's error: printed, exit status 1",
			args:   []string{"tool", "--repo", repo, "read_file", `{"path":"../../etc/passwd"}`},
			code:   1,
			want:   "outside the workspace: \"../../etc/passwd\"; give a path relative to the repository root, such as \"README.md\" or \"src/main.go\"\n",
			stderr: "bot: read_file failed: outside the workspace\n",
		},
		{name: "a denied file", args: []string{"tool", "--repo", repo, "read_file", `{"path":".env"}`}, code: 1, stderr: "read_file failed: denied"},
		{name: "two repositories and no --in", env: configured, args: []string{"tool", "glob", `{"pattern":"*.go"}`}, code: 2, stderr: "pick one with --in NAME: alpha, beta"},
		{name: "an unknown repository", env: configured, args: []string{"tool", "--in", "gamma", "glob", `{"pattern":"*.go"}`}, code: 1, stderr: `"gamma"`},
		{name: "an unknown tool", args: []string{"tool", "--repo", repo, "rm_rf", "{}"}, code: 2, stderr: `unknown tool "rm_rf"`},
		{name: "arguments that are not JSON", args: []string{"tool", "--repo", repo, "find_symbol", "Backoff"}, code: 2, stderr: "must be one JSON object with the keys kind, name, path"},
		{name: "a JSON array", args: []string{"tool", "--repo", repo, "glob", "[1]"}, code: 2, stderr: "must be one JSON object"},
		{name: "too many arguments", args: []string{"tool", "--repo", repo, "glob", "{}", "{}"}, code: 2, stderr: "quote the JSON"},
		{name: "--repo and --in", env: configured, args: []string{"tool", "--repo", repo, "--in", "alpha", "glob", "{}"}, code: 2, stderr: "give one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runBot(t, tc.env, tc.args...)
			if code != tc.code {
				t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			if tc.want != "" && out != tc.want {
				t.Errorf("stdout\n%s\nwant\n%s", out, tc.want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errOut)
			}
			if strings.ContainsAny(out+errOut, "\x1b\x07") || strings.Contains(out+errOut, "hunter2") {
				t.Errorf("raw control bytes or the secret printed:\n%q\n%q", out, errOut)
			}
		})
	}
}

// bot tool prints the registry's content for the call, byte for byte: what
// the model reads, escaped for the terminal as everything the bot prints.
func TestToolCommandPrintsWhatTheModelReads(t *testing.T) {
	repo := toolRepo(t)
	ws, err := tools.NewWorkspace(repo, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	reg := tools.NewRegistry(tools.Default(ws, tools.Options{})...)
	for _, c := range []struct{ name, args string }{
		{"search_code", `{"pattern":"Back\\w+"}`},
		{"read_file", `{"path":"retry/backoff.go","offset":3}`},
		{"list_files", `{}`},
		{"git_log", `{}`},
	} {
		want := termsafe.String(reg.Run(context.Background(), tools.Call{Name: c.name, Input: json.RawMessage(c.args)}).Content)
		out, errOut, code := runBot(t, nil, "tool", "--repo", repo, c.name, c.args)
		if code != 0 || out != want {
			t.Errorf("bot tool %s %s: exit %d, stderr %q\n%s\nwant\n%s", c.name, c.args, code, errOut, out, want)
		}
	}
}

func TestToolCommandLists(t *testing.T) {
	out, _, code := runBot(t, nil, "tool")
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	for _, name := range []string{"find_symbol", "find_references", "repo_map", "search_code", "read_file", "glob", "git_blame"} {
		if !strings.Contains(out, "\n"+name+" ") && !strings.HasPrefix(out, name+" ") {
			t.Errorf("the list lacks %s:\n%s", name, out)
		}
	}
	if strings.Contains(out, "e.g.\n") {
		t.Errorf("a description cut at an abbreviation:\n%s", out)
	}
}

// bot tool keeps the index it built in BOT_DATA_DIR, and a second run
// uses it instead of building it again.
func TestToolCommandKeepsItsIndex(t *testing.T) {
	repo := toolRepo(t)
	data := t.TempDir()
	env := map[string]string{"BOT_DATA_DIR": data}
	for i := range 2 {
		out, errOut, code := runBot(t, env, "tool", "--repo", repo, "find_symbol", `{"name":"Backoff"}`, "-v")
		if code != 0 || !strings.Contains(out, "retry/backoff.go:4") {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
		how := map[int]string{0: "how=built", 1: "how=loaded"}[i]
		if !strings.Contains(errOut, how) {
			t.Errorf("run %d did not log %s:\n%s", i, how, errOut)
		}
	}
	saved, err := filepath.Glob(filepath.Join(data, "index", "*", "*"))
	if err != nil || len(saved) != 1 {
		t.Fatalf("saved indexes: %q, %v; want one", saved, err)
	}
	if fi, err := os.Stat(saved[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("saved index %s: %v, %v; want mode 0600", saved[0], fi, err)
	}
}

// A call that would not use the index makes bot tool load or build none.
func TestToolCommandIndexesOnlyWhenUsed(t *testing.T) {
	repo := toolRepo(t)
	data := t.TempDir()
	env := map[string]string{"BOT_DATA_DIR": data}
	for _, args := range [][]string{
		{"read_file", `{"path":"README.md"}`},
		{"search_code", `{"pattern":"[A-Z]\\w*"}`},
	} {
		out, errOut, code := runBot(t, env, append([]string{"tool", "--repo", repo}, args...)...)
		if code != 0 || out == "" {
			t.Fatalf("bot tool %q: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	if saved, _ := filepath.Glob(filepath.Join(data, "index", "*", "*")); len(saved) != 0 {
		t.Errorf("calls that use no index built one: %q", saved)
	}
	if _, _, code := runBot(t, env, "tool", "--repo", repo, "search_code", `{"pattern":"Backoff"}`); code != 0 {
		t.Fatal("search_code with a literal failed")
	}
	if saved, _ := filepath.Glob(filepath.Join(data, "index", "*", "*")); len(saved) != 1 {
		t.Errorf("a search with a literal left %q, want one saved index", saved)
	}
}

// bot tool on a url repository of BOT_CONFIG uses a clone fetched less
// than BOT_REPO_SYNC ago as it is, in the checkout the call before left,
// and fetches one that is older.
func TestToolCommandUsesARecentClone(t *testing.T) {
	up := gitexectest.NewRemote(t)
	up.Push("main", gitexectest.Commit{Write: map[string]string{"f.txt": "first\n"}})
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf("repos:\n  - name: r\n    url: %s\n    channels: [\"*\"]\n", up.URL))
	data := t.TempDir()
	env := map[string]string{"BOT_CONFIG": cfgFile, "BOT_DATA_DIR": data, "BOT_REPO_SYNC": "1h", "BOT_INDEX": "off"}
	read := func(want string) []string {
		t.Helper()
		out, errOut, code := runBot(t, env, "tool", "--in", "r", "read_file", `{"path":"f.txt"}`)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, stdout %q, want %q\n%s", code, out, want, errOut)
		}
		trees, _ := filepath.Glob(filepath.Join(data, "repos", "r", "trees", "*", "*"))
		return trees
	}
	left := read("first")
	up.Push("main", gitexectest.Commit{Write: map[string]string{"f.txt": "second\n"}})
	if again := read("first"); len(left) != 1 || fmt.Sprint(again) != fmt.Sprint(left) {
		t.Errorf("worktrees after the second call %q, want the first's %q reused", again, left)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(data, "repos", "r", "fetched"), old, old); err != nil {
		t.Fatal(err)
	}
	read("second")
}
