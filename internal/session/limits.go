package session

import (
	"fmt"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/llm"
)

// Default size limits of a stored history. A tool result is already capped
// by the tool layer (tens of KB); these are the store's own backstop so one
// runaway thread cannot fill the disk or make every later load slow.
const (
	DefaultMaxMessages     = 2000
	DefaultMaxMessageBytes = 256 << 10
)

// Limits bounds what a store keeps of a session's history.
//
// MaxMessages caps the messages per session: when an append would pass it,
// the oldest whole turns (a turn starts at a user message) are dropped, so
// the history still starts at a question and every tool call keeps its
// result. If the current turn alone is over the cap, the append fails with
// ErrTooLarge.
//
// MaxMessageBytes caps a message's Content: a longer one is stored with its
// middle replaced by a note saying how much was elided, keeping the head and
// tail a reader (or model) most needs. Reasoning and tool calls are kept
// as they are, since thinking-mode models need them back byte for byte.
//
// Zero means the default; a negative value means no limit.
type Limits struct {
	MaxMessages     int
	MaxMessageBytes int
}

func (l Limits) maxMessages() int     { return limitOr(l.MaxMessages, DefaultMaxMessages) }
func (l Limits) maxMessageBytes() int { return limitOr(l.MaxMessageBytes, DefaultMaxMessageBytes) }

// limitOr reads a limit as Limits documents it: 0 means def, a negative
// value means none (returned as 0).
func limitOr(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// clip returns m with an oversize Content elided in the middle.
func (l Limits) clip(m llm.Message) llm.Message {
	max := l.maxMessageBytes()
	if max == 0 || len(m.Content) <= max {
		return m
	}
	m.Content = elideMiddle(m.Content, max)
	return m
}

// elideMiddle keeps the head and tail of s so that the result, note included,
// is at most max bytes (or the note alone when max is smaller than it), and
// cuts only at rune boundaries.
func elideMiddle(s string, max int) string {
	noteFor := func(n int) string {
		return fmt.Sprintf("\n[… %d bytes elided by the session store; call the tool again for the full output …]\n", n)
	}
	keep := max - len(noteFor(len(s)))
	if keep < 0 {
		keep = 0
	}
	head := keep / 2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (keep - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + noteFor(tail-head) + s[tail:]
}

// trimTurns returns how many leading messages of a history of n messages
// (with roles given by role) to drop so that n-drop <= max, dropping only
// whole turns: the cut lands on a user message. It reports ErrTooLarge
// when no such cut exists.
func (l Limits) trimTurns(n int, role func(i int) llm.Role) (int, error) {
	max := l.maxMessages()
	if max == 0 || n <= max {
		return 0, nil
	}
	for i := n - max; i < n; i++ {
		if role(i) == llm.RoleUser {
			return i, nil
		}
	}
	return 0, errOverLimit(int64(n), int64(max))
}

// overLimit returns the message cap and whether a history of n messages
// is over it, for the SQL stores, which find the cut in SQL.
func (l Limits) overLimit(n int64) (max int64, over bool) {
	max = int64(l.maxMessages())
	return max, max != 0 && n > max
}

// errOverLimit is the error of a history of n messages that no cut at a
// question brings down to max.
func errOverLimit(n, max int64) error {
	return fmt.Errorf("history of %d messages is over the limit of %d even after dropping older turns: %w", n, max, ErrTooLarge)
}
