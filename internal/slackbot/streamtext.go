package slackbot

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/repos"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// longLine is how much text without a paragraph break is held back before
// it is shown up to its last line break instead: a long list or code block
// still streams, line by line.
const longLine = 600

// streamText decides what of the model's text a stream shows, and when.
// Text is shown only up to a paragraph (or, in a long one, a line) break,
// with its citations checked at the turn's commit and rendered exactly as
// the posted answer renders them, so that nothing unverified ever shows
// as a link and what streamed is a prefix of the answer. A step that ends
// in tool calls was not the answer: what it showed stays, and the next
// step's text starts after it.
type streamText struct {
	s *stream

	// verify serialises the checks: the writer's and endStep's.
	verify sync.Mutex

	mu      sync.Mutex
	lease   *repos.Lease
	home    []string
	ctx     context.Context
	step    int    // the step whose text raw is
	attempt int    // the model request's attempt raw comes from
	raw     string // the step's text as written so far
	shown   string // its rendered prefix already queued
	gen     int    // bumped when a step's text ends
	any     bool   // some text was shown or queued in this turn
	live    bool   // some of the model's text was queued in this process
	// skip are the messages a restart found completed: the answer's
	// text they hold is not shown again.
	skip     []streamDone
	diverged bool // the step's text no longer extends what was shown
	// first is when the first text of the turn was heard, for the figure
	// of the bot's own delay until it is appended; timed once it is.
	first   time.Time
	timed   bool
	hurried bool // the writer was told not to wait for the first text
}

func newStreamText(s *stream, note string, skip []streamDone) *streamText {
	// A note the message starts with is text: what follows is set apart.
	return &streamText{s: s, ctx: context.Background(), any: note != "", skip: skip}
}

// bind gives the checkout the citations are checked in; until then no
// text is shown.
func (t *streamText) bind(ctx context.Context, lease *repos.Lease, home []string) {
	t.mu.Lock()
	t.lease, t.home, t.ctx = lease, home, context.WithoutCancel(ctx)
	t.mu.Unlock()
}

// heard is the llm.TextFunc of the turn: text of the current request as
// it arrives. A new attempt (a retried request) starts the step's text
// over; what it had shown must be written again before more is shown.
func (t *streamText) heard(attempt int, text string) {
	t.mu.Lock()
	if t.first.IsZero() {
		t.first = time.Now()
	}
	if attempt != t.attempt {
		t.attempt, t.raw = attempt, ""
	}
	t.raw += text
	first := !t.any && !t.hurried && breakAt(t.raw) > 0
	t.hurried = t.hurried || first
	t.mu.Unlock()
	if first {
		// The first text the asker can read goes out at once; the rest
		// is coalesced.
		t.s.hurry()
		return
	}
	t.s.poke()
}

// appended is told that text reached Slack: the first time, the delay
// since the first text was heard is observed.
func (t *streamText) appended() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timed || t.first.IsZero() {
		return
	}
	t.timed = true
	t.s.b.metrics.streamFirstText.Observe(time.Since(t.first).Seconds())
}

// endStep shows the rest of the text of a step that asked for tools, once,
// before its first task card.
func (t *streamText) endStep(step int) {
	t.mu.Lock()
	same := step == t.step
	t.mu.Unlock()
	if same {
		return
	}
	t.show(true)
	t.mu.Lock()
	t.step, t.attempt, t.raw, t.shown, t.diverged = step, 0, "", "", false
	t.gen++
	t.mu.Unlock()
}

// advance queues the step's verified text up to its last break.
func (t *streamText) advance() { t.show(false) }

func (t *streamText) show(whole bool) {
	t.verify.Lock()
	defer t.verify.Unlock()
	t.mu.Lock()
	raw, shown, gen, lease, home, ctx := t.raw, t.shown, t.gen, t.lease, t.home, t.ctx
	skip := t.diverged || lease == nil
	t.mu.Unlock()
	cut := len(raw)
	if !whole {
		cut = breakAt(raw)
	}
	if skip || strings.TrimSpace(raw[:cut]) == "" {
		return
	}
	r, ok := t.render(ctx, lease, home, raw[:cut])
	if !ok {
		return
	}
	var delta string
	switch {
	case strings.HasPrefix(r, shown):
		delta = r[len(shown):]
	case strings.HasPrefix(shown, r):
		return // a retried request has not caught up yet
	default:
		t.mu.Lock()
		t.diverged = true
		t.mu.Unlock()
		t.s.log.Info("a retried model request wrote other text than was shown; the answer follows whole")
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if delta == "" || t.gen != gen {
		return
	}
	if shown == "" && t.any {
		delta = "\n\n" + delta
	}
	t.shown, t.any, t.live = r, true, true
	t.s.push(slack.NewMarkdownTextChunk(delta))
}

// render is text with its citations checked, as the answer renders it;
// not ok when they could not be checked, for nothing unchecked to show.
func (t *streamText) render(ctx context.Context, lease *repos.Lease, home []string, text string) (string, bool) {
	text = strings.TrimFunc(text, unicode.IsSpace)
	checked, err := lease.CheckAnswer(ctx, text)
	if err != nil {
		return "", false
	}
	return render.AnswerMarkdown(checked.Markdown, home...), true
}

// breakAt is where raw may be cut for showing: after its last paragraph
// break, or its last line break when more than longLine follows the
// paragraph break; 0 for nowhere yet.
func breakAt(raw string) int {
	p := strings.LastIndex(raw, "\n\n")
	if p >= 0 {
		p += 2
	} else {
		p = 0
	}
	if len(raw)-p > longLine {
		if l := strings.LastIndex(raw, "\n"); l+1 > p {
			return l + 1
		}
	}
	return p
}

// rest is what of answer (checked, as posted) is not shown yet: its
// unshown end when the last step's text streamed, else all of it.
func (t *streamText) rest(answer string, home []string) string {
	t.verify.Lock()
	defer t.verify.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := render.AnswerMarkdown(answer, home...)
	if strings.TrimSpace(r) == "" {
		r = render.EmptyAnswer
	}
	if !t.live {
		if off := shownBefore(r, t.skip); off > 0 {
			t.s.log.Info("the answer's start is in messages streamed before a restart; streaming the rest", "shown", off, "of", len(r))
			r = r[off:]
		}
	}
	switch {
	case t.shown != "" && strings.HasPrefix(r, t.shown):
		r = r[len(t.shown):]
	case t.any:
		r = "\n\n" + r
	}
	t.shown, t.any = t.shown+r, true
	return r
}
