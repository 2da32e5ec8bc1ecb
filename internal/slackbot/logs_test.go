package slackbot

import (
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// durationKeys are the keys the bot and the packages it drives log
// durations under.
var durationKeys = []string{"duration", "queued", "grace", "lease_ttl", "waited", "retry_after"}

// The log of a turn, as an operator reads it: every line has each key
// once, durations read as durations, nothing empty stands for nothing,
// and an answer is summed up in exactly one line with everything about it.
func TestTurnLogReadsOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	// A rate limit makes the poster log too, under its own name.
	h.slack.FailNext("chat.postMessage", slacktest.RateLimited(time.Second))
	root := h.mention("C1", "what does this repo do?", "")
	h.waitReaction("C1", root, reactDone)
	h.waitTurns(1)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	var summaries []map[string]any
	sawGrace, sawPoster := false, false
	for _, m := range logtest.Lines(t, h.logs.String(), durationKeys...) {
		_, grace := m["grace"]
		sawGrace = sawGrace || grace
		sawPoster = sawPoster || m["component"] == "slack_poster"
		if m["level"] == "INFO" && (m["msg"] == "turn" || m["msg"] == "turn done") {
			summaries = append(summaries, m)
		}
	}
	if !sawGrace {
		t.Error("the shutdown line with the drain grace was not logged")
	}
	if n := len(h.logLines("serving Slack")); n != 1 {
		t.Errorf("serving Slack logged %d times, want once", n)
	}
	if !sawPoster {
		t.Error("the poster logged nothing about the rate limit")
	}
	if len(summaries) != 1 {
		t.Fatalf("%d summary lines for one answer, want 1: %v", len(summaries), summaries)
	}
	for _, k := range []string{"thread", "turn", "repo", "commit", "user", "outcome", "steps", "tool_calls", "prompt_tokens", "completion_tokens", "duration", "component"} {
		if _, ok := summaries[0][k]; !ok {
			t.Errorf("summary line lacks %q: %v", k, summaries[0])
		}
	}
	if _, ok := summaries[0]["ref"]; ok {
		t.Errorf("summary of an answered turn carries a ref: %v", summaries[0])
	}
}
