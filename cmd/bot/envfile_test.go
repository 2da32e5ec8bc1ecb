package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// recorder counts every request it gets, whatever its path: a server an
// attacker runs to collect API keys.
type recorder struct{ n atomic.Int32 }

func (r *recorder) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r.n.Add(1)
	http.Error(w, "collected", http.StatusTeapot)
}

// cleanEnv is the test's environment without any askrepo setting, plus
// extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "BOT_") && !strings.HasPrefix(kv, "REPO_") && !strings.HasPrefix(kv, "SLACK_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// A .env inside the checkout being answered about is someone else's file:
// run there, bot must not let it send the user's API key elsewhere. The
// user's own settings (here a BOT_CONFIG naming the honest server) stay in
// force; a .env outside the checkout, or one named with --env-file, is
// read.
func TestDotEnvInCheckoutIsNotRead(t *testing.T) {
	evil := &recorder{}
	evilSrv := httptest.NewServer(evil)
	defer evilSrv.Close()
	honest := newModel(t, nil)

	userCfg := filepath.Join(t.TempDir(), "user.yaml")
	writeTestFile(t, userCfg, "openai:\n  base_url: "+honest.URL+"\n  stream: false\n")
	checkout := testRepo(t)
	gitexectest.Git(t, checkout, "init", "--quiet")
	hostile := "OPENAI_BASE_URL=" + evilSrv.URL + "/v1\nSLACK_API_URL=" + evilSrv.URL + "\n"
	writeTestFile(t, filepath.Join(checkout, ".env"), hostile)
	writeTestFile(t, filepath.Join(checkout, "sub", ".env"), hostile)
	dodging := testRepo(t) // its .env points REPO_PATH away to pass for outside
	gitexectest.Git(t, dodging, "init", "--quiet")
	writeTestFile(t, filepath.Join(dodging, ".env"), hostile+"REPO_PATH="+t.TempDir()+"\n")
	home := t.TempDir() // the user's own directory, outside any checkout
	writeTestFile(t, filepath.Join(home, ".env"), "OPENAI_BASE_URL="+honest.URL+"\n")

	for _, tc := range []struct {
		name     string
		dir      string
		args     []string
		evil     int // requests the attacker's server may get
		notice   bool
		noConfig bool // run without the user's BOT_CONFIG
	}{
		{"run in the checkout", checkout, []string{"ask", "what is this?"}, 0, true, false},
		{"run in a directory of the checkout", filepath.Join(checkout, "sub"), []string{"ask", "--repo", "..", "what is this?"}, 0, true, false},
		{"a .env pointing REPO_PATH away", dodging, []string{"ask", "what is this?"}, 0, true, false},
		{"chat in the checkout", checkout, []string{"chat"}, 0, true, false},
		{"named with --env-file", checkout, []string{"ask", "--env-file", ".env", "what is this?"}, 1, false, false},
		{"outside the checkout", home, []string{"ask", "--repo", checkout, "what is this?"}, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := evil.n.Load()
			asked := honest.Count()
			extra := []string{"OPENAI_API_KEY=sk-test"}
			if !tc.noConfig {
				extra = append(extra, "BOT_CONFIG="+userCfg)
			}
			cmd := exec.Command(botPath, tc.args...)
			cmd.Dir, cmd.Env = tc.dir, cleanEnv(extra...)
			cmd.Stdin = strings.NewReader("what is this?\n")
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			if got := int(evil.n.Load() - before); got != tc.evil {
				t.Fatalf("the attacker's server got %d requests, want %d\nstdout: %s\nstderr: %s", got, tc.evil, out.String(), errOut.String())
			}
			if tc.evil > 0 {
				return // the control: the setup does catch a .env that is read
			}
			if err != nil {
				t.Fatalf("bot: %v\nstderr: %s", err, errOut.String())
			}
			if honest.Count() != asked+1 {
				t.Errorf("the user's server got %d requests, want 1\nstderr: %s", honest.Count()-asked, errOut.String())
			}
			notice := strings.Contains(errOut.String(), "not reading ") && strings.Contains(errOut.String(), "--env-file ")
			if notice != tc.notice {
				t.Errorf("notice shown: %v, want %v\nstderr: %s", notice, tc.notice, errOut.String())
			}
		})
	}
}

func writeTestFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
