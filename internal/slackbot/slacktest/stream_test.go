package slacktest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

func slackErr(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func TestStreamLifecycle(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	ctx := t.Context()
	root := srv.Mention("C1", "U1", "hi", "")

	// In a channel the recipient is required.
	if _, _, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root)); slackErr(err) != "missing_recipient" {
		t.Fatalf("start without recipient: %v, want missing_recipient", err)
	}
	_, ts, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root),
		slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(slacktest.DefaultTeamID),
		slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModePlan))
	if err != nil {
		t.Fatal(err)
	}
	task := slack.NewTaskUpdateChunk("call_1", "read_file main.go")
	task.Status = slack.TaskCardStatusInProgress
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(task)); err != nil {
		t.Fatal(err)
	}
	task.Status, task.Details = slack.TaskCardStatusComplete, "3 lines"
	task.Sources = []slack.TaskCardSource{slack.NewTaskCardSource("https://example.com/main.go", "main.go")}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(task, slack.NewMarkdownTextChunk("Hello "))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("world")); err != nil {
		t.Fatal(err)
	}
	// Details longer than Slack allows are refused.
	long := slack.NewTaskUpdateChunk("call_2", "x")
	long.Details = strings.Repeat("d", 257)
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(long)); slackErr(err) != "invalid_chunks" {
		t.Fatalf("long details: %v, want invalid_chunks", err)
	}
	// The message's text is limited to 12,000 characters in all.
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText(strings.Repeat("x", 12_000))); slackErr(err) != "msg_too_long" {
		t.Fatalf("past 12k: %v, want msg_too_long", err)
	}
	footer := slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "1 step", false, false))
	if _, _, err := api.StopStreamContext(ctx, "C1", ts, slack.MsgOptionBlocks(footer)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("late")); slackErr(err) != "message_not_in_streaming_state" {
		t.Fatalf("append after stop: %v, want message_not_in_streaming_state", err)
	}
	m, _ := srv.Snapshot().Message("C1", ts)
	if m.Streaming || m.MarkdownText != "Hello world" || m.TaskDisplayMode != "plan" || m.Recipient != "U1" {
		t.Fatalf("message = %+v", m)
	}
	tasks := m.Tasks()
	if len(tasks) != 1 || tasks[0].Status != "complete" || tasks[0].Details != "3 lines" || len(tasks[0].Sources) != 1 ||
		strings.Join(tasks[0].Statuses, ",") != "in_progress,complete" {
		t.Fatalf("tasks = %+v", tasks)
	}
	if got := m.BlockTypes(); len(got) != 1 || got[0] != "context" {
		t.Fatalf("blocks = %v", got)
	}
}

func TestStreamClosesWithAge(t *testing.T) {
	srv := newServer(t, slacktest.WithStreamMaxAge(time.Nanosecond))
	api := srv.Client()
	root := srv.Mention("D1", "U1", "hi", "")
	_, ts, err := api.StartStreamContext(t.Context(), "D1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("a"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if _, _, err := api.AppendStreamContext(t.Context(), "D1", ts, slack.MsgOptionMarkdownText("b")); slackErr(err) != "message_not_in_streaming_state" {
		t.Fatalf("append to an old stream: %v, want message_not_in_streaming_state", err)
	}
}

func TestAgentSessionStatus(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	if _, err := api.SetAgentSessionStatusContext(t.Context(), slack.AgentSessionSetStatusParameters{Status: "busy", ChannelID: "C1", ThreadTS: "1.2"}); slackErr(err) != "invalid_arguments" {
		t.Fatalf("unknown status: %v", err)
	}
	if _, err := api.SetAgentSessionStatusContext(t.Context(), slack.AgentSessionSetStatusParameters{Status: slack.AgentSessionStatusProcessing, ChannelID: "C1", ThreadTS: "1.2"}); err != nil {
		t.Fatal(err)
	}
	if s := srv.Snapshot().Sessions; len(s) != 1 || s[0].Status != "processing" {
		t.Fatalf("sessions = %+v", s)
	}
}
