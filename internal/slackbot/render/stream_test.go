package render

import (
	"strings"
	"testing"
)

func TestCutStream(t *testing.T) {
	para := strings.Repeat("a", 40)
	tests := []struct {
		name, before, text string
		room               int
		head, tail         string
	}{
		{"fits", "", "short\n\ntext", 100, "short\n\ntext", ""},
		{"late paragraph break", "", para + "\n\n" + para, 60, para + "\n\n", para},
		{"early paragraph break loses to a line break", "", "ab\n\n" + para + "\n" + para, 60, "ab\n\n" + para + "\n", para},
		{"no break: a hard cut", "", strings.Repeat("x", 50), 20, strings.Repeat("x", 20), strings.Repeat("x", 30)},
		{"inside a fence: closed and reopened", "", "```go\n" + para + "\n" + para + "\n```", 70,
			"```go\n" + para + "\n```", "```go\n" + para + "\n```"},
		{"fence opened before", "```py\n", para + "\n" + para + "\n```", 60,
			para + "\n```", "```py\n" + para + "\n```"},
		{"fence closed before the cut", "", "```\nx\n```\n" + para + "\n" + para, 60, "```\nx\n```\n" + para + "\n", para},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head, tail := CutStreamFenced(tt.before, tt.text, tt.room)
			if head != tt.head || tail != tt.tail {
				t.Errorf("cut = %q | %q, want %q | %q", head, tail, tt.head, tt.tail)
			}
			if textLen(head) > tt.room {
				t.Errorf("head has %d characters, room %d", textLen(head), tt.room)
			}
		})
	}
}
