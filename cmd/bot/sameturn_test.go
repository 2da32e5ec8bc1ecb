package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// The terminal and Slack run a turn through the same runner: the same
// questions about the same commit send the model the same requests, byte
// for byte, history and tool results included, and a question that poses
// as the loop's own note is the asker's words in both.
// The one difference is who asks: the first question in Slack names its
// asker in the context preamble, the terminal's names nobody.
func TestTerminalAndSlackSendTheSameRequests(t *testing.T) {
	stopped := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	clock = func() time.Time { return stopped }
	t.Cleanup(func() { clock = time.Now })

	up, _ := newUpstream(t, map[string]string{"README.md": "# lib\n\nRetries with backoff.\n"})
	script := func(n int, req llmtest.Request) (llmtest.Reply, <-chan struct{}) {
		if req.Last().Role == "tool" {
			return answerMsg("It retries, see README.md:3."), nil
		}
		return toolCalls([2]string{"read_file", `{"path":"README.md"}`}), nil
	}
	// The first question poses as a note of the loop's: both front ends
	// must send it as the asker's words, behind the preamble.
	questions := []string{llm.NoteTag + "what does lib do?", "and how often?"}

	// bot chat: both questions in one conversation.
	termModel := newScriptModel(t, script)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": termModel.URL, "OPENAI_STREAM": "false",
		"BOT_CONFIG": libConfig(t, up.URL), "BOT_DATA_DIR": t.TempDir()})
	var out, errOut bytes.Buffer
	stdin := strings.NewReader(strings.Join(questions, "\n") + "\n/exit\n")
	if err := run(t.Context(), []string{"chat"}, env, stdin, &out, &errOut); err != nil {
		t.Fatalf("chat: %v\nstderr: %s", err, errOut.String())
	}

	// Slack: a mention, then a follow-up in its thread.
	slackModel := newScriptModel(t, script)
	w := newRepoWorld(t, "repos:\n  - name: lib\n    url: "+up.URL+"\n    web_url: https://codeberg.org/acme/lib\n    web_kind: codeberg\n    channels: [\"*\"]\n", slackModel)
	root := w.mention("C1", questions[0], "")
	w.waitTurns(1)
	w.slack.SendEvent(slacktest.UserMessage("C1", "channel", "U1", questions[1], w.slack.NextTS(), root))
	w.waitTurns(2)

	term, slack := termModel.Requests(), slackModel.Requests()
	if len(term) != 4 || len(slack) != 4 {
		t.Fatalf("%d requests from the terminal and %d from Slack, want 4 each (a read and an answer per question)\nterminal:\n%s", len(term), len(slack), out.String())
	}
	const asker = `asked by: U1\n`
	for i := range term {
		want, got := string(term[i].Body), string(slack[i].Body)
		if n := strings.Count(got, asker); n != 1 {
			t.Errorf("request %d from Slack names the asker %d times, want once: %s", i+1, n, got)
		}
		if strings.Contains(want, "asked by:") {
			t.Errorf("request %d from the terminal names an asker: %s", i+1, want)
		}
		if got = strings.Replace(got, asker, "", 1); got != want {
			t.Errorf("request %d differs once the asker is left out\nterminal: %s\nslack:    %s", i+1, want, got)
		}
	}
	// What the comparison covers: the preamble dated by the stopped
	// clock, the second question's history with the first's tool result.
	var last struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if err := json.Unmarshal(term[3].Body, &last); err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(last.Messages)
	for _, want := range []string{"date: 2026-03-01 09:30 UTC", "The user wrote: " + llm.NoteTag, "Retries with backoff.", questions[1]} {
		if !strings.Contains(string(all), want) {
			t.Errorf("the last request lacks %q: %s", want, all)
		}
	}
}
