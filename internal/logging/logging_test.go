package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
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
