package slackbot

import (
	"testing"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// The other ways in stream as a mention does: /askrepo's answer and the
// message shortcut's are one streamed message in their thread, for the
// asker, with nothing else posted as the answer.
func TestStreamedEntryPoints(t *testing.T) {
	t.Run("command", func(t *testing.T) {
		h := newHarness(t, streamed(readThenAnswer, nil))
		h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "what does this repo do?"})
		root := h.commandRoot("C1")
		h.waitTurns(1)
		checkOneStream(t, h, root.TS)
	})
	t.Run("shortcut", func(t *testing.T) {
		h := newHarness(t, streamed(readThenAnswer, nil))
		ts, view, ok := h.askAbout("C1", pastedTrace)
		if !ok {
			t.Fatal("no modal opened")
		}
		h.submit(view, "why does this panic?")
		h.waitTurns(1)
		checkOneStream(t, h, ts)
	})
}

func checkOneStream(t *testing.T, h *harness, root string) {
	t.Helper()
	st := h.slack.Snapshot()
	ms := streams(st, root)
	if len(ms) != 1 || ms[0].Recipient != "U1" || ms[0].Streaming || len(ms[0].Tasks()) != 2 {
		t.Fatalf("streamed messages in the thread: %+v", ms)
	}
	if a := answers(st.BotMessages("C1", root, slacktest.DefaultBotID)); len(a) != 0 {
		t.Errorf("%d answers posted besides the stream", len(a))
	}
}
