package slackbot

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/logging"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
	"github.com/askrepo/askrepo/internal/turn"
)

// harness is one bot, connected through the real slack-go client to a fake
// Slack, answering with the real agent over a fake model server and a small
// repository in a temp dir.
type harness struct {
	t     testing.TB
	slack *slacktest.Server
	ai    *llmtest.Server
	store *session.Memory
	bot   *Bot
	logs  *logtest.Buffer

	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	runErr error
}

type harnessOpts struct {
	script func(llmtest.Request) llmtest.Reply
	stream bool
	cfg    func(*Config)
	// runner, when set, adjusts the turn runner's config before it is built.
	runner func(*turn.Config)
	// tune, when set, adjusts the bot's internals after New, before Run.
	tune func(*Bot)
	// slack, ai and store, when set, are shared with another harness: a
	// restart is a second bot on the first one's store and fakes.
	slack *slacktest.Server
	ai    *llmtest.Server
	store *session.Memory
	// files are written into the repository besides README.md and main.go.
	files map[string]string
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	if o.script == nil {
		o.script = readThenAnswer
	}
	srv := o.slack
	if srv == nil {
		srv = slacktest.New()
		t.Cleanup(srv.Close)
	}
	ai := o.ai
	if ai == nil {
		ai = llmtest.New(t, o.script)
	}
	store := o.store
	if store == nil {
		store = session.NewMemory()
	}

	files := map[string]string{
		"README.md": "# widget\n\nA widget service.\n",
		"main.go":   "package main\n\nfunc main() {}\n",
	}
	for name, content := range o.files {
		files[name] = content
	}
	// One root logger for every package, wired as cmd/bot wires it: each
	// names itself.
	logs := &logtest.Buffer{}
	logger := logging.New(logs, "json", slog.LevelDebug)
	model, err := llm.NewClient(llm.ClientConfig{
		BaseURL: ai.URL, APIKey: "sk-test-secret", Model: "fake-model", Stream: o.stream,
		MaxRetries: 1, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond,
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, slack: srv, ai: ai, store: store, logs: logs, done: make(chan error, 1)}
	cfg := Config{
		BotToken:         slacktest.DefaultBotToken,
		AppToken:         slacktest.DefaultAppToken,
		APIURL:           srv.APIURL(),
		Repos:            newTestRepos(t, files),
		Store:            h.store,
		PostInterval:     time.Millisecond,
		UpdateInterval:   time.Millisecond,
		PostBurst:        1000,
		ProgressInterval: 5 * time.Millisecond,
		DrainTimeout:     5 * time.Second,
		UI:               UIMessages,
		StreamInterval:   5 * time.Millisecond,
		Logger:           logger,
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	// The turns, over each turn's checkout and on the bot's store (a
	// test may have wrapped it), as cmd/bot runs them.
	rcfg := turn.Config{Store: cfg.Store, Agent: agent.Config{Model: model, Logger: logger}, Tools: testTools, Model: "fake-model"}
	if o.runner != nil {
		o.runner(&rcfg)
	}
	if cfg.Turns, err = turn.New(rcfg); err != nil {
		t.Fatal(err)
	}
	h.bot, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.tune != nil {
		o.tune(h.bot)
	}
	connected := srv.Connections()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.bot.Run(ctx) }()
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
		if t.Failed() {
			t.Logf("bot log:\n%s", h.logs.String())
		}
	})
	if err := srv.WaitConnected(h.ctx(), connected+1); err != nil {
		t.Fatalf("bot did not connect: %v\n%s", err, h.logs.String())
	}
	return h
}

// stop cancels Run and waits for it to return.
func (h *harness) stop() error {
	h.once.Do(func() {
		h.cancel()
		select {
		case h.runErr = <-h.done:
		case <-time.After(30 * time.Second):
			h.t.Errorf("Run did not return within 30s of cancel")
		}
	})
	return h.runErr
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// mention sends "<@UBOT> text" in channel, top-level when thread is "", and
// returns the message's ts.
func (h *harness) mention(channel, text, thread string) string {
	return h.slack.Mention(channel, "U1", text, thread)
}

// waitReaction waits until the bot has put reaction on the message.
func (h *harness) waitReaction(channel, ts, reaction string) {
	h.t.Helper()
	_, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		m, ok := st.Message(channel, ts)
		return ok && slices.Contains(m.Reactions, reaction)
	})
	if err != nil {
		h.t.Fatalf("reaction %q on %s/%s: %v", reaction, channel, ts, err)
	}
}

// waitTurns waits until n turn summary lines are logged: every turn's last act.
func (h *harness) waitTurns(n int) []map[string]any {
	h.t.Helper()
	ctx := h.ctx()
	for {
		lines := h.logLines("turn")
		if len(lines) >= n {
			return lines
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("waiting for %d turns, have %d", n, len(lines))
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// logLines returns the JSON log records with the given msg.
func (h *harness) logLines(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// answers returns the bot's messages in a thread that carry a markdown
// block: the answers, not the progress messages.
func answers(msgs []slacktest.Message) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range msgs {
		if slices.Contains(m.BlockTypes(), "markdown") {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) healthz() (int, string) {
	rec := httptest.NewRecorder()
	h.bot.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	return rec.Code, rec.Body.String()
}

func (h *harness) metrics() string {
	rec := httptest.NewRecorder()
	h.bot.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// gate holds scripted model replies until opened.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate               { return &gate{ch: make(chan struct{})} }
func (g *gate) open()              { g.once.Do(func() { close(g.ch) }) }
func (g *gate) c() <-chan struct{} { return g.ch }

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
