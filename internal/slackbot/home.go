package slackbot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// The Home tab: what a person can ask about, their recent threads, their
// usage this week, and how to ask.

// homeStore is what the Home tab asks of the store (every session store
// has it); a store without it shows no threads or usage.
type homeStore interface {
	UserTurns(ctx context.Context, team, user string, since time.Time, limit int) ([]session.Turn, error)
}

// repoChannels tells which channels a repository is bound to
// (*repos.Manager).
type repoChannels interface {
	Channels(repo string) []string
}

// homeEvery is how often one person's Home tab is published at most:
// Slack sends app_home_opened on every visit to the tab.
const homeEvery = 5 * time.Second

// homeThrottle remembers when each user's Home tab was last published. The
// zero value is ready to use; it is safe for concurrent use.
type homeThrottle struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// allow reports whether user's tab may be published at now, and if so
// counts it as published.
func (h *homeThrottle) allow(user string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[string]time.Time{}
	}
	if t, ok := h.last[user]; ok && now.Sub(t) < homeEvery {
		return false
	}
	for u, t := range h.last { // keep the map to the recent visitors
		if now.Sub(t) >= homeEvery {
			delete(h.last, u)
		}
	}
	h.last[user] = now
	return true
}

// onHome publishes the Home tab of the user who opened it, off the read
// loop, unless it was published a moment ago.
func (b *Bot) onHome(team string, ev *slackevents.AppHomeOpenedEvent) (queuedEvent, bool) {
	switch {
	case ev.Tab != "home" || ev.User == "":
		b.ignore(ignoreOther, "app_home_opened", "", 0)
		return queuedEvent{}, false
	case !b.homes.allow(ev.User, time.Now()):
		b.ignore(ignoreDup, "app_home_opened", "", 0)
		return queuedEvent{}, false
	}
	b.background(func(ctx context.Context) {
		view := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: b.homeBlocks(ctx, team, ev.User, ev.Channel)}}
		_, err := b.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: ev.User, View: view})
		b.cosmetic("views.publish", err)
	})
	return queuedEvent{}, false
}

func (b *Bot) homeBlocks(ctx context.Context, team, user, dm string) []slack.Block {
	if b.allowU != nil && !b.allowU[user] {
		return []slack.Block{mrkdwn("askrepo answers questions about code, but it is not enabled for you here. Ask an admin of this workspace.")}
	}
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "askrepo", false, false))}
	blocks = append(blocks, b.homeRepos(dm)...)
	blocks = append(blocks, slack.NewDividerBlock())
	blocks = append(blocks, b.homeActivity(ctx, team, user)...)
	blocks = append(blocks, slack.NewDividerBlock(), mrkdwn(commandHelp))
	return blocks
}

// maxHomeRepos bounds the repositories listed, within Slack's 100 blocks.
const maxHomeRepos = 40

// homeRepos lists the repositories a DM can ask about, each with its
// channels, commit, last sync and state. A failing repository shows that
// it fails and since when, never the error: that is the operators' (in
// the log and /healthz), and can name hosts and paths.
func (b *Bot) homeRepos(dm string) []slack.Block {
	if !strings.HasPrefix(dm, "D") {
		dm = "D"
	}
	names := b.cfg.Repos.ForChannel(dm)
	if len(names) == 0 {
		return []slack.Block{mrkdwn("*No repository answers in direct messages.* Mention me in a channel that has one.")}
	}
	health := map[string]repos.RepoHealth{}
	for _, h := range b.cfg.Repos.Health() {
		health[h.Name] = h
	}
	out := []slack.Block{mrkdwn("*Repositories you can ask about in a DM* (the first one unless you start with `in NAME:`)")}
	for _, name := range names[:min(len(names), maxHomeRepos)] {
		out = append(out, mrkdwn(fmt.Sprintf("*%s*: %s\n%s", name, repoState(health[name], time.Now()), b.boundChannels(name))))
	}
	return out
}

func repoState(h repos.RepoHealth, now time.Time) string {
	var parts []string
	switch {
	case !h.Available && h.LastError != "":
		return ":warning: unavailable: it could not be fetched; the operators have the details"
	case !h.Available:
		return ":hourglass_flowing_sand: not available yet"
	case h.LastError != "":
		parts = append(parts, ":warning: serving an older commit: the last sync failed "+ago(h.LastAttempt, now))
	default:
		parts = append(parts, ":white_check_mark: ready")
	}
	if h.Commit != "" {
		parts = append(parts, "commit `"+h.Commit[:min(len(h.Commit), 10)]+"`")
	}
	if !h.LastSync.IsZero() {
		parts = append(parts, "synced "+ago(h.LastSync, now))
	}
	return strings.Join(parts, " · ")
}

// boundChannels says where a repository answers, within the allow-list.
func (b *Bot) boundChannels(repo string) string {
	rc, ok := b.cfg.Repos.(repoChannels)
	if !ok {
		return ""
	}
	var where []string
	for _, c := range rc.Channels(repo) {
		switch {
		case c == repos.AnyChannel && b.allowCh == nil:
			where = append(where, "every channel I am in")
		case c == repos.AnyChannel:
			for _, id := range slices.Sorted(maps.Keys(b.allowCh)) {
				where = append(where, "<#"+id+">")
			}
		case c == repos.DirectMessages:
			where = append(where, "DMs")
		case b.allowCh == nil || b.allowCh[c]:
			where = append(where, "<#"+c+">")
		}
	}
	if len(where) == 0 {
		return "no channel"
	}
	return "Channels: " + strings.Join(slices.Compact(where), ", ")
}

// Bounds of the activity the Home tab reads and shows.
const (
	homeThreads   = 5
	homeTurnsRead = 500
)

// homeActivity is the user's recent threads (links) and usage this week.
func (b *Bot) homeActivity(ctx context.Context, team, user string) []slack.Block {
	hs, ok := b.cfg.Store.(homeStore)
	if !ok {
		return nil
	}
	now := time.Now().UTC()
	week := startOfWeek(now)
	turns, err := hs.UserTurns(ctx, team, user, week.AddDate(0, 0, -21), homeTurnsRead)
	if err != nil {
		b.log.Warn("read a user's turns for the Home tab", "user", user, "err", err)
		return []slack.Block{mrkdwn("_Your threads and usage cannot be shown right now._")}
	}
	var (
		seen    = map[session.Key]bool{}
		links   []string
		answers int
		tokens  int
	)
	for _, t := range turns {
		if !t.Started.Before(week) {
			tokens += t.Usage.PromptTokens + t.Usage.CompletionTokens
			if t.State == session.TurnDone {
				answers++
			}
		}
		if !seen[t.Key] && len(links) < homeThreads {
			seen[t.Key] = true
			links = append(links, "• "+b.threadLink(t))
		}
	}
	recent := "*Your recent threads*\n" + strings.Join(links, "\n")
	if len(links) == 0 {
		recent = "*Your recent threads*\nNone yet."
	}
	usage := fmt.Sprintf("*Your usage this week* (since Monday, UTC): %s, %s tokens", plural(answers, "answer"), thousands(tokens))
	return []slack.Block{mrkdwn(recent), mrkdwn(usage)}
}

// threadLink links a turn's thread, labelled with its question's first
// line (escaped: it is what someone typed).
func (b *Bot) threadLink(t session.Turn) string {
	label, _, _ := strings.Cut(strings.TrimSpace(t.Question), "\n")
	if utf8.RuneCountInString(label) > 80 {
		label = string([]rune(label)[:80]) + "…"
	}
	label = strings.ReplaceAll(render.Typed(label), "|", "¦")
	if label == "" {
		label = "(no question)"
	}
	if b.self.URL == "" {
		return label + " in <#" + t.Key.Channel + ">"
	}
	url := strings.TrimSuffix(b.self.URL, "/") + "/archives/" + t.Key.Channel + "/p" + strings.ReplaceAll(t.Key.Thread, ".", "")
	return "<" + url + "|" + label + ">"
}

func startOfWeek(t time.Time) time.Time {
	d := (int(t.Weekday()) + 6) % 7 // days since Monday
	y, m, day := t.AddDate(0, 0, -d).Date()
	return time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return t.UTC().Format("2006-01-02")
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// mrkdwn is a section of text sent verbatim, as every mrkdwn text the bot
// sends: Slack then links only the tokens written out, never a channel
// name or a mention it would find in what people typed.
func mrkdwn(text string) slack.Block {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, true), nil, nil)
}
