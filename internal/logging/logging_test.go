package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestDurationsAreStrings(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, "json", slog.LevelInfo)
	log.WithGroup("g").Info("x", "grace", time.Minute, "n", 3, slog.Group("in", "took", 1500*time.Millisecond))
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	g := m["g"].(map[string]any)
	if g["grace"] != "1m0s" || g["n"] != 3.0 || g["in"].(map[string]any)["took"] != "1.5s" {
		t.Errorf("line = %s, want durations as Go duration strings and numbers as numbers", buf.String())
	}
}

// What a log line quotes (a model's tool name, a server's error) may hold
// characters a terminal obeys; in either format they are written escaped.
func TestTerminalControlsAreEscaped(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		log := New(&buf, format, slog.LevelInfo)
		log.Info("tool \u009b2J done", "tool", "evil\u202egnp.exe", "err", errors.New("server said \u009b31mred\u2066x\u007f"),
			slog.Group("g", "name", "a\u0085b"))
		out := buf.String()
		if strings.ContainsAny(out, "\u009b\u202e\u2066\u007f\u0085") {
			t.Errorf("%s: line holds a raw control: %q", format, out)
		}
		for _, want := range []string{`u202e`, `u009b`, `u2066`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: line %q does not show %s", format, out, want)
			}
		}
	}
}
