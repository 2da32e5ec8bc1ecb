package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A .env that does not parse stops every command, so its error names the
// absolute path, the line and the way out, and never the file's text: the
// parser's own message quotes the rest of the file, secrets included.
func TestBadDotenv(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"space instead of =", "OPENAI_MODEL=m\n# keys\nOPENAI_API_KEY sk-secret-1234\nSLACK_BOT_TOKEN=xoxb-secret\n", `line 3: unexpected character "-" in a variable name`},
		{"crlf, dash in name", "A=1\r\nMY-KEY=sk-secret-1234\r\n", `line 2: unexpected character "-" in a variable name`},
		{"unterminated quote", "A=1\nB=2\nOPENAI_API_KEY=\"sk-secret-1234\nC=3\n", "line 3: a quoted value has no closing quote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ".env")
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			_, err := DotEnv(".env")
			if err == nil {
				t.Fatal("want an error")
			}
			for _, want := range []string{path, tc.want, "fix the line or remove the file", "real environment variables also work"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error shows the file's text: %v", err)
			}
		})
	}
}
