package slacktest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// A bot under test connects through the real slack-go client; the test drives it with
// events and waits for what it posts, without sleeping.
func Example() {
	srv := slacktest.New()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	api := srv.Client()
	sm := socketmode.New(api, socketmode.OptionPingInterval(2*time.Second))
	go func() { _ = sm.RunContext(ctx) }()

	// A tiny bot: ack every envelope, answer mentions in their thread.
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-sm.Events:
				if ev.Type != socketmode.EventTypeEventsAPI {
					continue
				}
				_ = sm.AckCtx(ctx, ev.Request.EnvelopeID, nil)
				if m, ok := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.AppMentionEvent); ok {
					_, _, _ = api.PostMessageContext(ctx, m.Channel, slack.MsgOptionText("`read_file README.md`", false), slack.MsgOptionTS(m.TimeStamp))
					_, _, _ = api.PostMessageContext(ctx, m.Channel, slack.MsgOptionText("It is a Slack bot.", false), slack.MsgOptionTS(m.TimeStamp))
				}
			}
		}
	}()

	root := srv.NextTS()
	envID := srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> what is this repo?", root, ""))
	if _, err := srv.WaitAck(ctx, envID); err != nil {
		fmt.Println(err)
		return
	}
	msgs, err := srv.WaitMessages(ctx, "C1", root, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range msgs {
		fmt.Println(m.TS, m.Text)
	}
	fmt.Println(len(srv.Calls("chat.postMessage")), "posts")
	// Output:
	// 1700000000.000200 `read_file README.md`
	// 1700000000.000300 It is a Slack bot.
	// 2 posts
}
