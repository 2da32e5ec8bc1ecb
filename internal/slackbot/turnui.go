package slackbot

import (
	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// This file is where a turn picks its UI: streamed, or the messages of
// the message UI (a progress message, then the answer).

// streams reports whether the turn is to be streamed, as far as is known
// before Slack is asked.
func (t *turnRun) streams() bool {
	ui := t.b.cfg.UI
	return ui == UIStream || (ui == UIAuto && !t.b.fallbacks.off("stream", t.in.Key.Team))
}

// announce handles a recovered turn's note: a streamed turn closes the
// messages the cut left open and starts its new one with the note, which
// is returned for it; otherwise the note is posted now, as it always was.
func (t *turnRun) announce(note string) string {
	cut := false
	if rc := t.j.recovered; rc != nil {
		if _, streams, _ := streamRecords(rc.turn.Parts); len(streams) > 0 {
			t.b.closeStreams(t.post, t.in, streams, t.log)
			cut = true
		}
	}
	if t.streams() {
		if note == "" && cut {
			// The answer was stored before the cut, but a message shows
			// it broken off: the new one says why it starts again.
			note = noteResuming
		}
		return note
	}
	t.postNote(note)
	return ""
}

func (t *turnRun) postNote(note string) {
	if note != "" {
		t.b.postOut(t.post, t.in, render.Outgoing{Text: note}, t.log)
	}
}

// showWork shows that the turn works: its streamed message, or the
// status line and the progress message.
func (t *turnRun) showWork(note string) {
	if t.streams() {
		if t.stream = t.openStream(note); t.stream != nil {
			t.stopCtl = t.startStopControl()
			return
		}
	}
	t.postNote(note)
	t.b.setStatus(t.post, t.in, "is reading the repository…")
	t.prog = newProgress(t.b, t.in, t.res.id)
}

// endWork ends what showWork started: the progress message's last edit,
// or the stream's Stop control. A streamed turn with no answer to finish
// it is closed here.
func (t *turnRun) endWork(answered bool) {
	if t.prog != nil {
		t.prog.finish()
	}
	if t.stream != nil {
		t.stopCtl.end(t)
		if !answered {
			t.stream.close()
		}
	}
}
