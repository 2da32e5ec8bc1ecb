package slacktest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

func TestAuthTestReportsBotIdentity(t *testing.T) {
	srv := newServer(t, slacktest.WithBotUser("UB2", "BB2", "helper"), slacktest.WithTeam("T9", "acme"))
	got, err := srv.Client().AuthTestContext(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got.UserID != "UB2" || got.BotID != "BB2" || got.TeamID != "T9" || got.User != "helper" || got.Team != "acme" {
		t.Errorf("auth.test = %+v", got)
	}
}

func TestPostMessageWithBlocksLandsInThread(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	root := srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> hi", "1700000000.000100", ""))
	_ = root

	ctxBlock := slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "read_file main.go", false, false))
	_, ts1, err := api.PostMessageContext(t.Context(), "C1",
		slack.MsgOptionText("read_file main.go", false),
		slack.MsgOptionBlocks(ctxBlock),
		slack.MsgOptionTS("1700000000.000100"))
	if err != nil {
		t.Fatal(err)
	}
	_, ts2, err := api.PostMessageContext(t.Context(), "C1",
		slack.MsgOptionText("the answer", false),
		slack.MsgOptionTS("1700000000.000100"))
	if err != nil {
		t.Fatal(err)
	}
	if !(ts1 > "1700000000.000100" && ts2 > ts1) {
		t.Errorf("timestamps %q, %q are not increasing after the root", ts1, ts2)
	}

	thread := srv.Thread("C1", "1700000000.000100")
	var texts []string
	for _, m := range thread {
		texts = append(texts, m.Text)
	}
	if diff := cmp.Diff([]string{"<@UBOT> hi", "read_file main.go", "the answer"}, texts); diff != "" {
		t.Errorf("thread texts (-want +got):\n%s", diff)
	}
	if got := thread[1].BlockTypes(); !cmp.Equal(got, []string{"context"}) {
		t.Errorf("context line block types = %v", got)
	}
	if thread[1].BotID != slacktest.DefaultBotID || thread[1].User != slacktest.DefaultBotUserID || thread[1].ThreadTS != "1700000000.000100" {
		t.Errorf("context line = %+v", thread[1])
	}
	calls := srv.Calls("chat.postMessage")
	if len(calls) != 2 || len(calls[0].Blocks) != 1 || calls[0].Blocks[0]["type"] != "context" || calls[0].Token != slacktest.DefaultBotToken {
		t.Errorf("recorded calls = %+v", calls)
	}
}

func TestRateLimitInjection(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	srv.FailNext("chat.postMessage", slacktest.RateLimited(2*time.Second))

	_, _, err := api.PostMessageContext(t.Context(), "C1", slack.MsgOptionText("x", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("err = %v, want *slack.RateLimitedError with RetryAfter 2s", err)
	}
	if _, _, err := api.PostMessageContext(t.Context(), "C1", slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("second post after the scripted failure: %v", err)
	}
	calls := srv.Calls("chat.postMessage")
	if len(calls) != 2 || !calls[0].Injected || calls[0].Status != 429 || calls[1].Injected {
		t.Errorf("calls = %+v", calls)
	}
}
