package slackbot

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/logging"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// A start that cannot reach Slack must say so, and not send the operator to
// regenerate a token that is fine.
func TestStartBlamesTheTokenOnlyWhenSlackRefusesIt(t *testing.T) {
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/api/"
	}
	noDNS := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		},
	}}
	refusing := slacktest.New()
	t.Cleanup(refusing.Close)
	refusing.FailAlways("auth.test", slacktest.SlackError("invalid_auth"))

	tests := []struct {
		name    string
		url     string
		client  *http.Client
		want    []string
		notWant []string
	}{
		{"connection refused", closed(), nil,
			[]string{"could not reach the Slack API", "connection refused"}, []string{"OAuth", "token"}},
		{"host name does not resolve", "http://slack.example.invalid/api/", noDNS,
			[]string{"could not reach the Slack API", "slack.example.invalid does not resolve"}, []string{"OAuth", "token"}},
		{"credentials in the API URL", strings.Replace(closed(), "http://", "http://tok-user:tok-pass@", 1) + "?key=tok-query", nil,
			[]string{"could not reach the Slack API", "connection refused"}, []string{"tok-"}},
		{"token refused by Slack", refusing.APIURL(), nil,
			[]string{"auth.test", "invalid_auth", "Bot User OAuth Token"}, []string{"could not reach"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logtest.Buffer
			b, err := New(Config{BotToken: slacktest.DefaultBotToken, AppToken: slacktest.DefaultAppToken, APIURL: tt.url, HTTPClient: tt.client, Repos: newTestRepos(t, nil), Turns: idleTurns(t, session.NewMemory()), Store: session.NewMemory(),
				Logger: logging.New(&logs, "json", slog.LevelDebug)})
			if err != nil {
				t.Fatal(err)
			}
			err = b.Run(t.Context())
			if err == nil {
				t.Fatal("Run = nil, want a start error")
			}
			if strings.Contains(logs.String(), "serving Slack") {
				t.Errorf("logged serving Slack before the tokens were accepted:\n%s", logs.String())
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q: %s", w, msg)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
					t.Errorf("error mentions %q: %s", w, msg)
				}
			}
		})
	}
}

func TestAppTokenShapeSaysWhatOneLooksLike(t *testing.T) {
	tests := []struct {
		token   string
		want    []string
		notWant []string
	}{
		{"garbage-value", []string{"xapp-", "App-Level Tokens", "connections:write"}, []string{"bot token", "garbage-value"}},
		{"xoxb-1-secret", []string{"xapp-", "App-Level Tokens", "bot token (xoxb-)"}, []string{"secret"}},
		{"xoxp-1-secret", []string{"xapp-", "user token (xoxp-)"}, []string{"secret", "bot token"}},
	}
	for _, tt := range tests {
		_, err := New(Config{BotToken: slacktest.DefaultBotToken, AppToken: tt.token, Repos: newTestRepos(t, nil), Turns: idleTurns(t, session.NewMemory()), Store: session.NewMemory()})
		if err == nil {
			t.Fatalf("New with app token %q = nil error", tt.token)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q: %v", tt.token, w, err)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(err.Error(), w) {
				t.Errorf("%s: error says %q: %v", tt.token, w, err)
			}
		}
	}
}

// The bot answers only about configured repositories, with turns run
// over each turn's checkout: New says which of the two is missing.
func TestNewNeedsReposAndTurns(t *testing.T) {
	rs := newTestRepos(t, nil)
	tests := []struct {
		name    string
		repos   Repos
		turns   Turns
		want    []string
		notWant []string
	}{
		{"neither", nil, nil, []string{"no Repos", "no Turns"}, nil},
		{"no repos", nil, idleTurns(t, session.NewMemory()), []string{"no Repos"}, []string{"Turns"}},
		{"no agent", rs, nil, []string{"no Turns"}, []string{"no Repos"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{BotToken: slacktest.DefaultBotToken, AppToken: slacktest.DefaultAppToken, Store: session.NewMemory(), Repos: tt.repos, Turns: tt.turns})
			if err == nil {
				t.Fatal("New = nil error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error mentions %q: %v", w, err)
				}
			}
		})
	}
}
