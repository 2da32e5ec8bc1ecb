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
// minute. Use it as slog.HandlerOptions.ReplaceAttr.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
