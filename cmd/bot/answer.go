package main

import (
	"fmt"
	"strings"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/gitexec"
)

// How an answer reaches the terminal. A person reads it as the model
// writes it, so its text is printed as it streams in (escaped, like
// everything else). Its citations can only be checked once it is whole,
// and checking line by line would misjudge what a later line changes (a
// fence that opens earlier, a table's header row), so they are checked at
// the end and listed under the answer: each with its permalink at the
// turn's commit, or the reason it is wrong. A terminal does not render
// Markdown, so a link the model wrote shows its destination as text; only
// an escape sequence (OSC 8) could hide it, and those are escaped. An
// answer that did not stream (the demo model, OPENAI_STREAM=false) is
// checked before it is printed and printed with its citations rewritten in
// place, as Slack shows it.

// startTurn forgets the text of the turn before.
func (t *terminal) startTurn() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.streamed.Reset()
	t.attempt = 0
}

// hear prints a piece of the model's reply as it streams in (an
// llm.TextFunc). A reply's leading blank space is dropped; a reply that
// starts over, because its stream broke and the request is retried, is
// said to do so.
func (t *terminal) hear(attempt int, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if attempt != t.attempt {
		if t.streamed.Len() > 0 {
			t.endLineLocked()
			t.out.style(dim, "(the connection broke; the answer starts again)")
			fmt.Fprintln(t.out)
		}
		t.streamed.Reset()
		t.attempt = attempt
	}
	if t.streamed.Len() == 0 {
		text = strings.TrimLeft(text, " \t\r\n")
		if text == "" {
			return
		}
		t.endLineLocked()
		fmt.Fprintln(t.out)
	}
	t.streamed.WriteString(text)
	fmt.Fprint(t.out, text)
	t.midLine = !strings.HasSuffix(text, "\n")
}

// endLine ends a line the answer left open.
func (t *terminal) endLine() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endLineLocked()
}

func (t *terminal) endLineLocked() {
	if t.midLine {
		fmt.Fprintln(t.out)
		t.midLine = false
	}
}

// printCitations lists the checked citations of a streamed answer, once
// each: ✓ with the permalink when the repository has a web view, ⚠ with
// the reason when the path or lines are not there. Citations that were
// skipped (import paths and the like) or could not be checked are left
// out, as Rewrite leaves them unmarked.
func (t *terminal) printCitations(results []cite.Result, commit string) {
	seen := map[string]bool{}
	var lines []func()
	for _, r := range results {
		key := r.Citation.String()
		if r.Skipped || r.Err != nil || seen[key] || (!r.Valid && r.Reason == "") {
			continue
		}
		seen[key] = true
		switch {
		case r.Valid && r.URL != "":
			lines = append(lines, func() { fmt.Fprintf(t.out, "  ✓ %s  %s\n", key, r.URL) })
		case r.Valid:
			lines = append(lines, func() { fmt.Fprintf(t.out, "  ✓ %s\n", key) })
		default:
			lines = append(lines, func() {
				t.out.style(yellow, "  ⚠ "+key)
				fmt.Fprintf(t.out, ": %s\n", r.Reason)
			})
		}
	}
	if len(lines) == 0 {
		return
	}
	heading := "Citations, checked"
	if commit != "" {
		heading += " at " + gitexec.ShortCommit(commit)
	}
	fmt.Fprintln(t.out)
	t.out.style(dim, heading+":")
	fmt.Fprintln(t.out)
	for _, l := range lines {
		l()
	}
}
