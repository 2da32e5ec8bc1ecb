// Command fakeslack serves the fake Slack of the tests (slacktest: the Web
// API and the Socket Mode websocket) on a local port, so a benchmark can
// run a real bot serve beside the commands it times. It prints the
// environment a bot needs to connect to it, one VAR=value per line, then
// serves until it is stopped (SIGINT, SIGTERM).
//
//	fakeslack > slack.env & ...; env $(cat slack.env) bot serve
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

func main() {
	srv := slacktest.New()
	defer srv.Close()
	fmt.Printf("SLACK_API_URL=%s\nSLACK_BOT_TOKEN=%s\nSLACK_APP_TOKEN=%s\n", srv.APIURL(), slacktest.DefaultBotToken, slacktest.DefaultAppToken)
	os.Stdout.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}
