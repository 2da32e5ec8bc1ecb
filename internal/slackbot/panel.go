package slackbot

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
)

// The assistant panel (Agents & AI Apps): a thread in the user's DM with
// the bot, opened beside whatever channel the user is viewing. Its
// messages arrive as message.im like any DM and are answered the same way;
// what the panel adds is the channel in view, whose repositories answer
// the thread's first question, a greeting with suggested prompts, and a
// title.

// panelThreads remembers, per panel thread, the channel in view whose
// repositories answer it, its greeting and whether its title was set. It
// is this process's cache: the greeting's metadata in Slack keeps the
// channel in view for a restart or another replica (see recallPanel), so
// a thread it no longer holds is read back from there. It holds the
// maxPanelThreads threads used last, so a long-running process does not
// grow with every panel thread it ever saw. The zero value is ready to
// use; it is safe for concurrent use.
type panelThreads struct {
	mu  sync.Mutex
	m   map[session.Key]*list.Element // of *panelEntry
	lru list.List                     // most recently used first
	max int                           // 0: maxPanelThreads
}

// maxPanelThreads bounds the panel threads a process remembers.
const maxPanelThreads = 10_000

type panelEntry struct {
	key session.Key
	panelThread
}

type panelThread struct {
	context  string // "" for the DM's own repositories
	greeting string // the greeting's ts, "" if not known here
	titled   bool
}

func (p *panelThreads) get(key session.Key) (panelThread, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[key]
	if !ok {
		return panelThread{}, false
	}
	p.lru.MoveToFront(e)
	return e.Value.(*panelEntry).panelThread, true
}

func (p *panelThreads) set(key session.Key, context string) {
	p.update(key, func(t *panelThread) { t.context = context })
}

func (p *panelThreads) update(key session.Key, f func(*panelThread)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[session.Key]*list.Element{}
	}
	e, ok := p.m[key]
	if ok {
		p.lru.MoveToFront(e)
	} else {
		e = p.lru.PushFront(&panelEntry{key: key})
		p.m[key] = e
		for limit := cmp.Or(p.max, maxPanelThreads); p.lru.Len() > limit; {
			last := p.lru.Back()
			p.lru.Remove(last)
			delete(p.m, last.Value.(*panelEntry).key)
		}
	}
	f(&e.Value.(*panelEntry).panelThread)
}

// title marks key's title set and reports whether it was not yet.
func (p *panelThreads) title(key session.Key) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[key]
	if !ok || e.Value.(*panelEntry).titled {
		return false
	}
	e.Value.(*panelEntry).titled = true
	return true
}

// onPanel handles assistant_thread_started (started) and
// assistant_thread_context_changed. A redelivery is handled once. The
// thread follows the channel in view until its first question binds it to
// a repository; from then on it stays there (bind says so to a question
// about another).
func (b *Bot) onPanel(ctx context.Context, team, eventID string, th slackevents.AssistantThread, started bool) (queuedEvent, bool) {
	if eventID != "" && !b.firstEvent(ctx, "panel:"+eventID) {
		b.ignore(ignoreDup, "assistant_thread", eventID, 0)
		return queuedEvent{}, false
	}
	in := inbound{Key: session.Key{Team: team, Channel: th.ChannelID, Thread: th.ThreadTimeStamp}, User: th.UserID, IM: true}
	if in.Key.Channel == "" || in.Key.Thread == "" {
		return queuedEvent{}, false
	}
	if !started {
		// A thread this process does not know is left unknown when bound:
		// its next question reads the channel in view from the greeting.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), receiveTimeout)
		bound := b.hasSession(hctx, in)
		cancel()
		if bound {
			return queuedEvent{}, false
		}
	}
	in.Context = b.panelContext(th.Context.ChannelID)
	b.panels.set(in.Key, in.Context)
	b.background(func(ctx context.Context) { b.greet(ctx, in, started) })
	return queuedEvent{}, false
}

// panelContext is the channel in view whose repositories a panel thread
// reads: only one the allow-lists let the bot answer in and some
// repository serves; else "" (the DM's own).
func (b *Bot) panelContext(channel string) string {
	switch {
	case channel == "", strings.HasPrefix(channel, "D"):
		return ""
	case b.allowCh != nil && !b.allowCh[channel]:
		return ""
	case len(b.cfg.Repos.ForChannel(channel)) == 0:
		return ""
	}
	return channel
}

// inPanel gives a DM question in an open panel thread the channel in view,
// and the thread its title from its first question.
func (b *Bot) inPanel(in *inbound) {
	if !in.IM {
		return
	}
	t, ok := b.panels.get(in.Key)
	if !ok {
		return
	}
	in.Context = t.context
	b.titlePanel(*in, false)
}

// titlePanel titles a panel thread with its first question, once. A
// process that learns of the thread from its greeting (recalled) titles it
// only if the thread has no session yet: then this is its first question.
func (b *Bot) titlePanel(in inbound, recalled bool) {
	if !b.panels.title(in.Key) {
		return
	}
	key, title := in.Key, panelTitle(in.Text)
	b.background(func(ctx context.Context) {
		if _, ok, err := b.cfg.Store.SessionInfo(ctx, key); recalled && (ok || err != nil) {
			return
		}
		err := b.api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: key.Channel, ThreadTS: key.Thread, Title: title})
		b.cosmetic("assistant.threads.setTitle", err)
	})
}

// panelTitleRunes keeps a title to what fits the panel's thread list.
const panelTitleRunes = 60

// panelTitle is a thread's title from its first question: its first line,
// cut at a word near panelTitleRunes.
func panelTitle(q string) string {
	q, _, _ = strings.Cut(strings.TrimSpace(q), "\n")
	if utf8.RuneCountInString(q) <= panelTitleRunes {
		return q
	}
	r := []rune(q)[:panelTitleRunes]
	s := string(r)
	if i := strings.LastIndex(s, " "); i > panelTitleRunes/2 {
		s = s[:i]
	}
	return s + "…"
}

// greet posts the greeting of a new panel thread, or after a context
// change updates it, and sets the thread's suggested prompts for the
// repository its question will be about. The greeting carries the channel
// in view in its metadata, where any process finds it.
func (b *Bot) greet(ctx context.Context, in inbound, started bool) {
	names := b.cfg.Repos.ForChannel(in.repoChannel())
	enabled := b.allowed(in) && len(names) > 0
	text := noteNotEnabled
	if enabled {
		text = greeting(in, names)
	}
	meta := slack.MsgOptionMetadata(slack.SlackMetadata{EventType: panelMetaType, EventPayload: map[string]any{"channel": in.Context}})
	if started {
		_, ts, err := b.api.PostMessageContext(ctx, in.Key.Channel, slack.MsgOptionText(text, false), slack.MsgOptionTS(in.Key.Thread), meta)
		b.cosmetic("chat.postMessage", err)
		b.panels.update(in.Key, func(t *panelThread) { t.greeting = ts })
	} else if ts := b.greetingTS(ctx, in.Key); ts != "" {
		_, _, _, err := b.api.UpdateMessageContext(ctx, in.Key.Channel, ts, slack.MsgOptionText(text, false), meta)
		b.cosmetic("chat.update", err)
	}
	if !enabled {
		return
	}
	repo := names[0]
	err := b.api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{
		ChannelID: in.Key.Channel, ThreadTS: in.Key.Thread, Title: "Ask about " + repo, Prompts: b.suggestions(ctx, repo),
	})
	b.cosmetic("assistant.threads.setSuggestedPrompts", err)
}

// panelMetaType is the event_type of a greeting's metadata; its payload's
// "channel" is the channel in view ("" for the DM's own repositories).
const panelMetaType = "askrepo_panel"

// greetingTS is the ts of key's greeting, from this process's memory or
// else from the thread.
func (b *Bot) greetingTS(ctx context.Context, key session.Key) string {
	if t, ok := b.panels.get(key); ok && t.greeting != "" {
		return t.greeting
	}
	ts, _, _ := b.findGreeting(ctx, key)
	return ts
}

// findGreeting reads a DM thread for the bot's panel greeting: its ts and
// the channel in view it records. found is false for a thread that is not
// a panel's, or one Slack cannot show now.
func (b *Bot) findGreeting(ctx context.Context, key session.Key) (ts, channel string, found bool) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	msgs, _, _, err := b.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: key.Channel, Timestamp: key.Thread, Limit: 20, IncludeAllMetadata: true,
	})
	if err != nil {
		b.cosmetic("conversations.replies", err)
		return "", "", false
	}
	for _, m := range msgs {
		if m.BotID == b.self.BotID && m.Metadata.EventType == panelMetaType {
			channel, _ = m.Metadata.EventPayload["channel"].(string)
			ts, found = m.Timestamp, true
		}
	}
	return ts, channel, found
}

// recallPanel gives a question in a DM thread this process knows nothing
// of the channel in view its panel greeting recorded, if it is a panel
// thread: one opened before a restart, or whose events another replica
// took. The channel passes the same checks as when the thread opened.
func (b *Bot) recallPanel(ctx context.Context, in *inbound) {
	if !in.IM || in.Context != "" || in.Via != "" || in.Key.Thread == in.TS {
		return
	}
	if _, ok := b.panels.get(in.Key); ok {
		return
	}
	ts, channel, found := b.findGreeting(ctx, in.Key)
	in.Context = b.panelContext(channel)
	if !found {
		// Not a panel thread: remembered, so the thread is not read again.
		b.panels.update(in.Key, func(t *panelThread) { t.titled = true })
		return
	}
	b.panels.update(in.Key, func(t *panelThread) { t.context, t.greeting = in.Context, ts })
	b.titlePanel(*in, true)
}

func greeting(in inbound, names []string) string {
	where := "."
	if in.Context != "" {
		where = fmt.Sprintf(", the repository of <#%s>.", in.Context)
	}
	s := fmt.Sprintf("Hi <@%s>! I answer questions about *%s*%s Ask where something is implemented, how a flow works, or what changed; I read the code and cite it.", in.User, names[0], where)
	if len(names) > 1 {
		s += fmt.Sprintf(" Start with `in NAME:` to ask about another: %s.", strings.Join(names[1:], ", "))
	}
	return s
}

// maxPrompts is how many suggested prompts Slack shows in a thread.
const maxPrompts = 4

// suggestions are the prompts for repo, from its top-level names (a
// package, a configuration file) when its checkout can be read, skipping
// what the deny-list hides. Names come from the repository, so only plain
// ones are used.
func (b *Bot) suggestions(ctx context.Context, repo string) []slack.AssistantThreadsPrompt {
	ps := []slack.AssistantThreadsPrompt{{Title: "What is " + repo + "?", Message: "What does " + repo + " do and how is it laid out?"}}
	dir, config := b.topNames(ctx, repo)
	if dir != "" {
		ps = append(ps, slack.AssistantThreadsPrompt{Title: "What is in " + dir + "/?", Message: "What does " + dir + "/ do, and what uses it?"})
	}
	if config != "" {
		ps = append(ps, slack.AssistantThreadsPrompt{Title: "How is it configured?", Message: "How is " + repo + " configured? Where is " + config + " read, and what do its settings do?"})
	}
	ps = append(ps, slack.AssistantThreadsPrompt{Title: "What changed this week?", Message: "What changed in " + repo + " this week?"})
	return ps[:min(len(ps), maxPrompts)]
}

// plainName is a file name fit for a prompt.
var plainName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$`) })

// configNames are top-level files that configure a project, most telling first.
var configNames = []string{"config.yaml", "config.yml", "config.toml", "settings.py", "application.yml", ".env.example", "docker-compose.yml", "Dockerfile", "Makefile"}

// Directories that say little about what a project does.
var dullDirs = []string{"docs", "doc", "test", "tests", "testdata", "vendor", "node_modules", "examples", "scripts", "build", "dist"}

// topNames picks a top-level directory and a configuration file of repo's
// checkout; "" for none. It lists one directory and reads no file.
func (b *Bot) topNames(ctx context.Context, repo string) (dir, config string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := b.cfg.Repos.Acquire(ctx, repo)
	if err != nil {
		b.log.Debug("no checkout for suggested prompts", "repo", repo, "err", err)
		return "", ""
	}
	defer l.Release()
	return pickNames(l)
}

func pickNames(l *repos.Lease) (dir, config string) {
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		return "", ""
	}
	rank := len(configNames)
	for _, e := range entries {
		n := e.Name()
		if !plainName().MatchString(n) || (l.Workspace != nil && l.Workspace.Denied(n)) {
			continue
		}
		if e.IsDir() && dir == "" && !strings.HasPrefix(n, ".") && !slices.Contains(dullDirs, strings.ToLower(n)) {
			dir = n
		}
		if i := slices.Index(configNames, n); i >= 0 && i < rank && e.Type().IsRegular() {
			config, rank = n, i
		}
	}
	return dir, config
}

// firstEvent reports whether key is seen for the first time, so a
// redelivered event is handled once; a store that cannot tell lets it
// through.
func (b *Bot) firstEvent(ctx context.Context, key string) bool {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), receiveTimeout)
	defer cancel()
	first, err := b.cfg.Store.FirstSeen(rctx, key, b.cfg.DedupeTTL)
	if err != nil {
		b.log.Warn("dedupe an event", "key", key, "err", err)
		return true
	}
	return first
}
