package slackbot

import (
	"slices"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

func TestMentionPostsContextLinesThenAnswer(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	root := h.mention("C1", "what does this repo do?", "")
	h.waitReaction("C1", root, reactDone)
	h.waitTurns(1)

	msgs := h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)
	if len(msgs) != 2 {
		t.Fatalf("bot posted %d messages in the thread, want 2 (progress, answer): %+v", len(msgs), msgs)
	}
	progress, answer := msgs[0], msgs[1]

	// The progress message comes first and, once done, shows both calls in
	// call order with their results and no Stop button.
	if got := progress.BlockTypes(); !slices.Equal(got, []string{"context", "context"}) {
		t.Errorf("progress blocks = %v, want two context lines and no Stop button", got)
	}
	text := progress.AllText()
	iRead, iList := strings.Index(text, "read_file"), strings.Index(text, "list_files")
	if iRead < 0 || iList < 0 || iRead > iList {
		t.Errorf("progress text %q: want read_file before list_files", text)
	}
	if !strings.Contains(text, "README.md") || !strings.Contains(text, "✓") {
		t.Errorf("progress text %q: want the path and a ✓ result", text)
	}
	// It was first posted while the calls ran, with the Stop button.
	if len(progress.Edits) == 0 || !slices.ContainsFunc(progress.Edits, func(e slacktest.Edit) bool {
		return strings.Contains(mustJSON(t, e.Blocks), stopActionID)
	}) {
		t.Errorf("progress message was never shown with a Stop button: edits %+v", progress.Edits)
	}

	if got := answer.BlockTypes(); !slices.Equal(got, []string{"markdown", "context"}) {
		t.Errorf("answer blocks = %v, want markdown + footer", got)
	}
	if !strings.Contains(answer.AllText(), "Answer** to: what does this repo do?") {
		t.Errorf("answer %q does not carry the model's answer to the stripped question", answer.AllText())
	}
	if footer := answer.AllText(); !strings.Contains(footer, "2 tool calls") || !strings.Contains(footer, "cached") {
		t.Errorf("footer %q: want tool calls and cached tokens", footer)
	}

	// The model saw the repository and the question, without the mention.
	reqs := h.ai.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	first := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	if !strings.Contains(first, "repository: acme/widget") || !strings.HasSuffix(first, "what does this repo do?") || strings.Contains(first, "<@UBOT>") {
		t.Errorf("first user message = %q", first)
	}

	root0, _ := h.slack.Message("C1", root)
	if slices.Contains(root0.Reactions, reactWorking) {
		t.Errorf("reactions on the question = %v, want 👀 swapped for ✅", root0.Reactions)
	}

	line := h.logLines("turn")[0]
	for k, want := range map[string]any{"outcome": "answered", "steps": 2.0, "tool_calls": 2.0, "prompt_tokens": 2200.0, "cached_tokens": 800.0} {
		if line[k] != want {
			t.Errorf("turn log %s = %v, want %v", k, line[k], want)
		}
	}
}
