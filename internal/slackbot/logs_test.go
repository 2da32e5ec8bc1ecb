package slackbot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

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
	durations := map[string]bool{"duration": true, "queued": true, "grace": true, "lease_ttl": true, "waited": true, "retry_after": true}
	sawGrace, sawPoster := false, false
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if dup := duplicateKeys(line); len(dup) > 0 {
			t.Errorf("keys %v appear twice in %s", dup, line)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		for k, v := range m {
			if v == "" {
				t.Errorf("empty %q in %s", k, line)
			}
			if !durations[k] {
				continue
			}
			s, ok := v.(string)
			if _, err := time.ParseDuration(s); !ok || err != nil {
				t.Errorf("%s = %v, want a Go duration string, in %s", k, v, line)
			}
			sawGrace = sawGrace || k == "grace"
		}
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

// duplicateKeys returns the keys that appear more than once in one object
// of a JSON line, at any depth: encoding/json keeps the last silently.
func duplicateKeys(line []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(line))
	var dups []string
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if seen[key] {
					dups = append(dups, key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(); err != nil && !errors.Is(err, io.EOF) {
		return []string{"<not JSON: " + err.Error() + ">"}
	}
	return dups
}
