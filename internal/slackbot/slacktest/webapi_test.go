package slacktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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

// rawCall posts body to the fake and decodes the JSON answer.
func rawCall(t *testing.T, srv *slacktest.Server, method, contentType, auth, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.APIURL()+method, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: answer is not JSON: %v", method, err)
	}
	return out
}

func TestTokens(t *testing.T) {
	srv := newServer(t)
	url := slack.OptionAPIURL(srv.APIURL())
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"wrong bot token", func() error {
			_, err := slack.New("xoxb-wrong", url).AuthTestContext(t.Context())
			return err
		}, "invalid_auth"},
		{"app token for a bot method", func() error {
			_, _, err := slack.New(slacktest.DefaultAppToken, url).PostMessageContext(t.Context(), "C1", slack.MsgOptionText("x", false))
			return err
		}, "not_allowed_token_type"},
		{"bot token for apps.connections.open", func() error {
			_, _, err := slack.New(slacktest.DefaultBotToken, url, slack.OptionAppLevelToken(slacktest.DefaultBotToken)).StartSocketModeContext(t.Context())
			return err
		}, "not_allowed_token_type"},
		{"wrong app token", func() error {
			_, _, err := slack.New(slacktest.DefaultBotToken, url, slack.OptionAppLevelToken("xapp-wrong")).StartSocketModeContext(t.Context())
			return err
		}, "invalid_auth"},
		{"no token", func() error {
			_, err := slack.New("", url).AuthTestContext(t.Context())
			return err
		}, "not_authed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var se slack.SlackErrorResponse
			if !errors.As(err, &se) || se.Err != tt.want {
				t.Errorf("err = %v, want Slack error %s", err, tt.want)
			}
		})
	}
	if n := srv.Snapshot().Tickets; n != 0 {
		t.Errorf("%d tickets issued to bad tokens", n)
	}

	// The right app token gets a ws:// URL with a ticket.
	_, wsURL, err := srv.Client().StartSocketModeContext(t.Context())
	if err != nil || !strings.HasPrefix(wsURL, "ws://") || !strings.Contains(wsURL, "/ws?ticket=") {
		t.Errorf("apps.connections.open = %q, %v", wsURL, err)
	}
}

func TestFailureInjection(t *testing.T) {
	tests := []struct {
		name  string
		resp  slacktest.Response
		check func(t *testing.T, err error)
	}{
		{"rate limited", slacktest.RateLimited(1500 * time.Millisecond), func(t *testing.T, err error) {
			rl, ok := errors.AsType[*slack.RateLimitedError](err)
			if !ok || rl.RetryAfter != 2*time.Second {
				t.Errorf("err = %v, want RateLimitedError rounded up to 2s", err)
			}
		}},
		{"server error", slacktest.HTTPError(503), func(t *testing.T, err error) {
			sc, ok := errors.AsType[slack.StatusCodeError](err)
			if !ok || sc.Code != 503 {
				t.Errorf("err = %v, want StatusCodeError 503", err)
			}
		}},
		{"slack error", slacktest.SlackError("channel_not_found"), func(t *testing.T, err error) {
			se, ok := errors.AsType[slack.SlackErrorResponse](err)
			if !ok || se.Err != "channel_not_found" {
				t.Errorf("err = %v, want channel_not_found", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			api := srv.Client()
			srv.FailNext("chat.update", tt.resp)
			_, ts, err := api.PostMessageContext(t.Context(), "C1", slack.MsgOptionText("v1", false))
			if err != nil {
				t.Fatalf("post (not scripted): %v", err)
			}
			_, _, _, err = api.UpdateMessageContext(t.Context(), "C1", ts, slack.MsgOptionText("v2", false))
			tt.check(t, err)
			if m, _ := srv.Message("C1", ts); m.Text != "v1" {
				t.Errorf("failed update changed the message to %q", m.Text)
			}
			if _, _, _, err := api.UpdateMessageContext(t.Context(), "C1", ts, slack.MsgOptionText("v2", false)); err != nil {
				t.Errorf("update after the scripted failure: %v", err)
			}
			calls := srv.Calls("chat.update")
			if len(calls) != 2 || !calls[0].Injected || calls[0].Status != tt.resp.Status || calls[1].Injected {
				t.Errorf("calls = %+v", calls)
			}
		})
	}

	t.Run("always until cleared", func(t *testing.T) {
		srv := newServer(t)
		api := srv.Client()
		srv.FailAlways("reactions.add", slacktest.SlackError("ratelimited"))
		for range 3 {
			if err := api.AddReactionContext(t.Context(), "eyes", slack.ItemRef{Channel: "C1", Timestamp: "1"}); err == nil {
				t.Fatal("scripted failure did not apply")
			}
		}
		srv.ClearFailures()
		err := api.AddReactionContext(t.Context(), "eyes", slack.ItemRef{Channel: "C1", Timestamp: "1"})
		if se, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || se.Err != "message_not_found" {
			t.Errorf("after ClearFailures err = %v, want the real answer message_not_found", err)
		}
	})
}

func TestMessageValidation(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	many := make([]slack.Block, 51)
	for i := range many {
		many[i] = slack.NewDividerBlock()
	}
	tests := []struct {
		name string
		opts []slack.MsgOption
		want string
	}{
		{"nothing to post", nil, "no_text"},
		{"markdown_text with text", []slack.MsgOption{slack.MsgOptionText("a", false), slack.MsgOptionMarkdownText("**a**")}, "markdown_text_conflict"},
		{"too many blocks", []slack.MsgOption{slack.MsgOptionText("a", false), slack.MsgOptionBlocks(many...)}, "invalid_blocks"},
		{"text too long", []slack.MsgOption{slack.MsgOptionText(strings.Repeat("x", 40_001), false)}, "msg_too_long"},
		{"markdown too long", []slack.MsgOption{slack.MsgOptionMarkdownText(strings.Repeat("x", 12_001))}, "markdown_text_too_long"},
		{"markdown alone is fine", []slack.MsgOption{slack.MsgOptionMarkdownText("**a**")}, ""},
		{"blocks alone are fine", []slack.MsgOption{slack.MsgOptionBlocks(slack.NewMarkdownBlock("", "**a**"))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := api.PostMessageContext(t.Context(), "C1", tt.opts...)
			if tt.want == "" {
				if err != nil {
					t.Errorf("err = %v, want success", err)
				}
				return
			}
			se, ok := errors.AsType[slack.SlackErrorResponse](err)
			if !ok || se.Err != tt.want {
				t.Errorf("err = %v, want %s", err, tt.want)
			}
		})
	}
	if got := rawCall(t, srv, "chat.postMessage", "application/x-www-form-urlencoded", "",
		"token="+slacktest.DefaultBotToken+"&channel=C1&blocks=%5Bnot+json"); got["error"] != "invalid_blocks_format" {
		t.Errorf("unparseable blocks answered %v", got)
	}
}

func TestJSONBodyWithBearerToken(t *testing.T) {
	srv := newServer(t)
	got := rawCall(t, srv, "chat.postMessage", "application/json; charset=utf-8", slacktest.DefaultBotToken,
		`{"channel":"C1","text":"hi","thread_ts":"1700000000.000100","blocks":[{"type":"markdown","text":"**hi**"}]}`)
	if got["ok"] != true {
		t.Fatalf("answer = %v", got)
	}
	m, ok := srv.Message("C1", got["ts"].(string))
	if !ok || m.ThreadTS != "1700000000.000100" || len(m.Blocks) != 1 || m.Blocks[0]["text"] != "**hi**" {
		t.Errorf("stored = %+v", m)
	}
	if got := rawCall(t, srv, "chat.scheduleMessage", "application/json", slacktest.DefaultBotToken, `{}`); got["error"] != "unknown_method" {
		t.Errorf("unsupported method answered %v", got)
	}
}

func TestUpdateDeleteReactionsEphemeralStatus(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	ctx := t.Context()
	const root = "1700000000.000100"
	srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> q", root, ""))

	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("thinking", false), slack.MsgOptionTS(root))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("done", false), slack.MsgOptionBlocks(slack.NewMarkdownBlock("", "done"))); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReactionContext(ctx, "eyes", slack.ItemRef{Channel: "C1", Timestamp: root}); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReactionContext(ctx, "white_check_mark", slack.ItemRef{Channel: "C1", Timestamp: root}); err != nil {
		t.Fatal(err)
	}
	if err := api.RemoveReactionContext(ctx, "eyes", slack.ItemRef{Channel: "C1", Timestamp: root}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.PostEphemeralContext(ctx, "C1", "U1", slack.MsgOptionText("only you", false), slack.MsgOptionTS(root)); err != nil {
		t.Fatal(err)
	}
	if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: "C1", ThreadTS: root, Status: "is reading files", LoadingMessages: []string{"Reading", "Searching"},
	}); err != nil {
		t.Fatal(err)
	}
	_, gone, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("oops", false), slack.MsgOptionTS(root))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, "C1", gone); err != nil {
		t.Fatal(err)
	}

	errTests := []struct {
		name string
		call func() error
		want string
	}{
		{"react twice", func() error {
			return api.AddReactionContext(ctx, "white_check_mark", slack.ItemRef{Channel: "C1", Timestamp: root})
		}, "already_reacted"},
		{"remove absent reaction", func() error {
			return api.RemoveReactionContext(ctx, "eyes", slack.ItemRef{Channel: "C1", Timestamp: root})
		}, "no_reaction"},
		{"update a user's message", func() error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", root, slack.MsgOptionText("x", false))
			return err
		}, "cant_update_message"},
		{"update unknown ts", func() error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", "1.000001", slack.MsgOptionText("x", false))
			return err
		}, "message_not_found"},
		{"update deleted", func() error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", gone, slack.MsgOptionText("x", false))
			return err
		}, "message_not_found"},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			se, ok := errors.AsType[slack.SlackErrorResponse](tt.call())
			if !ok || se.Err != tt.want {
				t.Errorf("err = %v, want %s", se, tt.want)
			}
		})
	}

	thread := srv.Thread("C1", root)
	if len(thread) != 2 {
		t.Fatalf("thread = %+v, want root and the updated reply (ephemeral and deleted hidden)", thread)
	}
	if !cmp.Equal(thread[0].Reactions, []string{"white_check_mark"}) {
		t.Errorf("root reactions = %v", thread[0].Reactions)
	}
	reply := thread[1]
	if reply.Text != "done" || !cmp.Equal(reply.BlockTypes(), []string{"markdown"}) || len(reply.Edits) != 1 || reply.Edits[0].Text != "thinking" {
		t.Errorf("reply = %+v", reply)
	}
	var eph []slacktest.Message
	for _, m := range srv.Messages() {
		if m.Ephemeral {
			eph = append(eph, m)
		}
	}
	if len(eph) != 1 || eph[0].Recipient != "U1" || eph[0].Text != "only you" {
		t.Errorf("ephemeral = %+v", eph)
	}
	want := []slacktest.Status{{Channel: "C1", ThreadTS: root, Status: "is reading files", LoadingMessages: []string{"Reading", "Searching"}}}
	if diff := cmp.Diff(want, srv.Statuses(), cmpopts.IgnoreFields(slacktest.Status{}, "At")); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

func TestConversationsRepliesReadsTheStore(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	const root = "1700000000.000100"
	srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> q", root, ""))
	srv.SendEvent(slacktest.UserMessage("C1", "channel", "U2", "me too", "", root))
	for _, text := range []string{"line 1", "answer"} {
		if _, _, err := api.PostMessageContext(t.Context(), "C1", slack.MsgOptionText(text, false), slack.MsgOptionTS(root)); err != nil {
			t.Fatal(err)
		}
	}
	srv.SendEvent(slacktest.UserMessage("C1", "channel", "U1", "elsewhere", "", ""))

	var texts []string
	cursor := ""
	for pages := 0; ; pages++ {
		msgs, more, next, err := api.GetConversationRepliesContext(t.Context(), &slack.GetConversationRepliesParameters{
			ChannelID: "C1", Timestamp: root, Limit: 3, Cursor: cursor,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			texts = append(texts, m.Text)
			if m.Timestamp == root && (m.ReplyCount != 3 || m.ThreadTimestamp != root) {
				t.Errorf("root = %+v, want reply_count 3 and thread_ts", m.Msg)
			}
		}
		if !more {
			if pages != 1 {
				t.Errorf("took %d extra pages, want 1", pages)
			}
			break
		}
		cursor = next
	}
	if diff := cmp.Diff([]string{"<@UBOT> q", "me too", "line 1", "answer"}, texts); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	_, _, _, err := api.GetConversationRepliesContext(t.Context(), &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.000001"})
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || se.Err != "thread_not_found" {
		t.Errorf("unknown thread: err = %v", err)
	}
}

func TestInfoMethods(t *testing.T) {
	srv := newServer(t, slacktest.WithChannel("C1", "general"), slacktest.WithUser("U1", "ada"))
	api := srv.Client()
	ch, err := api.GetConversationInfoContext(t.Context(), &slack.GetConversationInfoInput{ChannelID: "C1"})
	if err != nil || ch.Name != "general" || !ch.IsChannel {
		t.Errorf("conversations.info C1 = %+v, %v", ch, err)
	}
	dm, err := api.GetConversationInfoContext(t.Context(), &slack.GetConversationInfoInput{ChannelID: "D7"})
	if err != nil || !dm.IsIM {
		t.Errorf("conversations.info D7 = %+v, %v", dm, err)
	}
	u, err := api.GetUserInfoContext(t.Context(), "U1")
	if err != nil || u.Name != "ada" || u.IsBot {
		t.Errorf("users.info U1 = %+v, %v", u, err)
	}
	bot, err := api.GetUserInfoContext(t.Context(), slacktest.DefaultBotUserID)
	if err != nil || !bot.IsBot || bot.Name != slacktest.DefaultBotName {
		t.Errorf("users.info UBOT = %+v, %v", bot, err)
	}
}

// TestWaitMessagesWakesOnPost shows the waiting helpers need no sleeps: the waiter
// is woken by the post itself.
func TestWaitMessagesWakesOnPost(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	const root = "1700000000.000100"
	srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> q", root, ""))
	errc := make(chan error, 1)
	go func() {
		for _, text := range []string{"`list_files .`", "`read_file go.mod`", "answer"} {
			if _, _, err := api.PostMessageContext(context.Background(), "C1", slack.MsgOptionText(text, false), slack.MsgOptionTS(root)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	msgs, err := srv.WaitMessages(waitCtx(t), "C1", root, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if diff := cmp.Diff([]string{"`list_files .`", "`read_file go.mod`", "answer"}, texts); diff != "" {
		t.Errorf("bot messages (-want +got):\n%s", diff)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := srv.WaitMessages(ctx, "C1", root, 4); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "calls") {
		t.Errorf("err = %v, want context.Canceled with a summary of what was recorded", err)
	}
}

func TestHoldKeepsACallInFlight(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	release := srv.Hold("chat.postMessage")
	type result struct {
		ts  string
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, ts, err := api.PostMessageContext(context.Background(), "C1", slack.MsgOptionText("slow", false))
		done <- result{ts, err}
	}()
	calls, err := srv.WaitCalls(waitCtx(t), "chat.postMessage", 1)
	if err != nil {
		t.Fatal(err)
	}
	if calls[0].Status != 0 || len(srv.Messages()) != 0 {
		t.Fatalf("held call was answered: %+v, messages %v", calls[0], srv.Messages())
	}
	release()
	release() // idempotent
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if m, ok := srv.Message("C1", r.ts); !ok || m.Text != "slow" {
		t.Errorf("stored = %+v, %v", m, ok)
	}
	if c := srv.Calls("chat.postMessage")[0]; c.Status != http.StatusOK {
		t.Errorf("call after release = %+v", c)
	}

	t.Run("Close releases holds", func(t *testing.T) {
		srv := slacktest.New()
		srv.Hold("auth.test")
		errc := make(chan error, 1)
		go func() {
			_, err := srv.Client().AuthTestContext(context.Background())
			errc <- err
		}()
		if _, err := srv.WaitCalls(waitCtx(t), "auth.test", 1); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if err := <-errc; err != nil {
			t.Errorf("held auth.test after Close: %v", err)
		}
	})
}
