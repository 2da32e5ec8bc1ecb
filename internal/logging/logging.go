// Package logging builds the process's one slog handler, so every line
// renders the same way whoever logs it. It imports no other internal
// package.
//
// Each package that logs names itself once, with .With("component", …) on
// the logger it is given; whoever wires packages together passes them the
// root logger unnamed, so no line carries the key twice.
package logging

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
)

// New returns a logger writing JSON lines, or logfmt-like text when format
// is "text", at level and above.
func New(w io.Writer, format string, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: ReplaceAttr}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// ReplaceAttr renders a time.Duration as Go writes it ("1m0s", "350ms"):
// slog's JSON handler writes raw nanoseconds, which nobody reads as a
// minute. It also escapes, in strings and errors, the characters a
// terminal showing the log would obey and the JSON handler leaves as they
// are (see visible). Use it as slog.HandlerOptions.ReplaceAttr.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		return slog.String(a.Key, a.Value.Duration().String())
	case slog.KindString:
		if s := a.Value.String(); strings.ContainsFunc(s, hidden) {
			return slog.String(a.Key, visible(s))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok && strings.ContainsFunc(err.Error(), hidden) {
			return slog.String(a.Key, visible(err.Error()))
		}
	}
	return a
}

// hidden reports the characters the JSON handler writes raw but a
// terminal acts on: C1 controls (U+009B is CSI, like ESC [), DEL, and the
// bidirectional embeddings, overrides and isolates that reorder a line
// (U+202A–U+202E, U+2066–U+2069). Log lines quote what the model, a
// repository or a server wrote, and they are read in terminals (docker
// logs, journalctl). C0 controls are escaped by both handlers already.
func hidden(r rune) bool {
	return r == 0x7f || 0x80 <= r && r <= 0x9f || 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069
}

// visible writes each hidden character of s in Go's notation (\u202e).
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
