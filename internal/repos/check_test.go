package repos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check reports what New would refuse in the environment and on disk, all
// at once, and touches nothing: no clone, no data directory.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	specs := []Spec{
		{Name: "ok", Path: dir, Channels: []string{"*"}},
		{Name: "gone", Path: filepath.Join(dir, "nope"), Channels: []string{"*"}},
		{Name: "file", Path: file, Channels: []string{"*"}},
		{Name: "tok", URL: "https://h.example/x.git", TokenEnv: "TOK_UNSET", Channels: []string{"*"}},
		{Name: "key", URL: "git@h.example:x.git", SSHKeyEnv: "KEY_UNSET", Channels: []string{"*"}},
		{Name: "deny", Path: dir, Deny: []string{"[unclosed"}, Channels: []string{"*"}},
		{Name: "set", URL: "https://h.example/y.git", TokenEnv: "TOK_SET", Channels: []string{"*"}},
	}
	env := func(k string) (string, bool) {
		if k == "TOK_SET" {
			return "t0ken", true
		}
		return "", false
	}
	err := Check(specs, "", "", env)
	if err == nil {
		t.Fatal("want problems")
	}
	msg := err.Error()
	for _, want := range []string{
		"repository gone: path " + filepath.Join(dir, "nope") + " is not a directory",
		"repository file: path " + file + " is not a directory",
		"repository tok: token_env: the environment variable TOK_UNSET is not set",
		"repository key: ssh_key_env: the environment variable KEY_UNSET is not set",
		"repository deny: deny: ",
		"repository tok: url repositories need a data directory",
		"repository set: url repositories need a data directory",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	for _, bad := range []string{"repository ok:", "t0ken"} {
		if strings.Contains(msg, bad) {
			t.Errorf("error says %q:\n%s", bad, msg)
		}
	}
	if n := len(strings.Split(msg, "\n")); n != 8 {
		t.Errorf("%d lines, want one per problem (8):\n%s", n, msg)
	}
}

// A file with problems still yields its specs, so what they need from the
// environment can be checked in the same start, and each problem names
// the file and the line of its repository.
func TestLoadFileKeepsSpecsAndLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repos.yaml")
	doc := "repos:\n  - name: Bad\n    path: /x\n    channels: [\"*\"]\n  - name: good\n    url: https://h.example/x.git\n    token_env: T\n    channels: [nope]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	specs, err := LoadFile(path)
	if len(specs) != 2 || specs[1].TokenEnv != "T" {
		t.Errorf("specs = %+v, want both, as decoded", specs)
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{path + `: line 2: repos[0] (Bad): name "Bad"`, path + `: line 5: repos[1] (good): channels: "nope"`}
	if len(lines) != len(want) {
		t.Fatalf("error:\n%s\nwant %d lines", err, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d = %q, want it to start with %q", i, lines[i], want[i])
		}
	}
}
