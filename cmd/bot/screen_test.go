package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Colour is decided for each stream on its own: a terminal gets it, a
// file, a pipe or /dev/null (a character device, but no terminal) does
// not; NO_COLOR turns it off everywhere, FORCE_COLOR and CLICOLOR_FORCE on.
func TestWantColor(t *testing.T) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name string
		w    io.Writer
		env  map[string]string
		want bool
	}{
		{"/dev/null", devnull, nil, false},
		{"a file", file, nil, false},
		{"a buffer", &bytes.Buffer{}, nil, false},
		{"FORCE_COLOR", &bytes.Buffer{}, map[string]string{"FORCE_COLOR": "1"}, true},
		{"CLICOLOR_FORCE", devnull, map[string]string{"CLICOLOR_FORCE": "1"}, true},
		{"FORCE_COLOR=0", &bytes.Buffer{}, map[string]string{"FORCE_COLOR": "0"}, false},
		{"NO_COLOR wins", &bytes.Buffer{}, map[string]string{"NO_COLOR": "1", "FORCE_COLOR": "1"}, false},
		{"NO_COLOR empty is unset", &bytes.Buffer{}, map[string]string{"NO_COLOR": "", "FORCE_COLOR": "1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wantColor(tc.w, envMap(tc.env)); got != tc.want {
				t.Errorf("wantColor = %v, want %v", got, tc.want)
			}
		})
	}
}

// In a real terminal (a pty, by script(1)) with stderr sent to a file,
// stdout is coloured and stderr is not; NO_COLOR turns stdout's off.
func TestColourPerStream(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script(1) from util-linux is needed to give the bot a terminal: %v", err)
	}
	repo := testRepo(t)
	for _, tc := range []struct {
		name    string
		env     []string
		wantOut bool
	}{
		{"terminal", nil, true},
		{"NO_COLOR", []string{"NO_COLOR=1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errFile := filepath.Join(t.TempDir(), "stderr")
			cmd := exec.Command("script", "-qec", botPath+" ask --repo "+repo+" 'what is this?' 2>"+errFile, os.DevNull)
			cmd.Dir = t.TempDir()
			cmd.Env = cleanEnv(append(tc.env, "TERM=xterm")...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("script: %v\n%s", err, out)
			}
			stderr, err := os.ReadFile(errFile)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), "Widget turns sprockets") || !strings.Contains(string(stderr), "demo model") {
				t.Fatalf("unexpected output:\nstdout: %q\nstderr: %q", out, stderr)
			}
			if got := strings.Contains(string(out), "\x1b["); got != tc.wantOut {
				t.Errorf("colour on the terminal: %v, want %v\n%q", got, tc.wantOut, out)
			}
			if strings.Contains(string(stderr), "\x1b[") {
				t.Errorf("colour in the file stderr goes to:\n%q", stderr)
			}
		})
	}
}
