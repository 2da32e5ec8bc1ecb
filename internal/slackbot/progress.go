package slackbot

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/turn"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// progress is the turn.Observer of one turn: it only shows and counts. It
// keeps the turn's tool calls as context lines and a writer goroutine
// mirrors them into the thread: new messages are posted at once, edits of
// a posted message are coalesced to one per ProgressInterval (chat.update
// allows about 50 a minute), and finish makes the last edit, which drops
// the Stop button, before the answer is posted.
type progress struct {
	b      *Bot
	in     inbound
	turnID string

	counts *turnCounts

	mu    sync.Mutex
	lines []render.CallLine
	byID  map[string]int

	kick     chan struct{}
	done     chan struct{}
	finished chan struct{}
	once     sync.Once

	sent []string          // owned by the writer: JSON of each posted message
	ts   []string          // owned by the writer: ts of each posted message
	out  []render.Outgoing // owned by the writer: each posted message as sent
}

var _ turn.Observer = (*progress)(nil)

func newProgress(b *Bot, in inbound, turnID string) *progress {
	p := &progress{
		b:        b,
		in:       in,
		turnID:   turnID,
		byID:     make(map[string]int),
		counts:   newTurnCounts(b),
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	go p.write()
	return p
}

func (p *progress) ToolStarted(c turn.Call) {
	p.counts.toolStarted()
	p.mu.Lock()
	p.byID[c.ID] = len(p.lines)
	p.lines = append(p.lines, render.CallLine{Name: c.Name, Brief: c.Brief, State: render.CallRunning})
	p.mu.Unlock()
	p.poke()
}

func (p *progress) ToolDone(c turn.Call) {
	p.counts.toolDone(c)
	p.mu.Lock()
	if i, ok := p.byID[c.ID]; ok {
		p.lines[i].State = render.CallOK
		if c.Failed {
			p.lines[i].State = render.CallFailed
		}
		p.lines[i].Summary = c.Summary
		p.lines[i].URL = c.Link
	}
	p.mu.Unlock()
	p.poke()
}

func (p *progress) StepDone(s turn.Step) { p.counts.stepDone(s) }

func (p *progress) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// finish waits for the writer's last edit. After it, the thread shows every
// call with its result and no Stop button.
func (p *progress) finish() {
	p.once.Do(func() { close(p.done) })
	<-p.finished
}

func (p *progress) write() {
	defer close(p.finished)
	interval := p.b.cfg.ProgressInterval
	for {
		select {
		case <-p.kick:
		case <-p.done:
			p.flush(true)
			return
		}
		p.flush(false)
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-p.done:
			t.Stop()
			p.flush(true)
			return
		}
	}
}

// flush renders all lines and brings the thread in line: posts the messages
// that are new, edits those whose content changed.
func (p *progress) flush(final bool) {
	p.mu.Lock()
	lines := append([]render.CallLine(nil), p.lines...)
	p.mu.Unlock()
	if len(lines) == 0 {
		return
	}
	opts := render.ProgressOptions{StopActionID: stopActionID, StopValue: p.turnID}
	if final {
		opts = render.ProgressOptions{}
	}
	// Posts and edits outlive a Stop or a timeout (the thread must end up
	// right), but not the final grace after a shutdown cut.
	ctx, cancel := context.WithTimeout(p.b.slackCtx, time.Minute)
	defer cancel()
	ch, thread := p.in.Key.Channel, p.in.Key.Thread
	msgs := render.ProgressMessages(lines, opts)
	if final {
		// Rendering splits the same way with and without the button, so
		// this finds nothing; should that ever change, a posted message
		// the final render no longer covers would keep a live Stop button
		// under the answer.
		for i := len(msgs); i < len(p.out); i++ {
			msgs = append(msgs, withoutActions(p.out[i]))
		}
	}
	for i, m := range msgs {
		js, err := json.Marshal(m)
		if err != nil {
			p.b.log.Error("render a progress message", "err", err)
			return
		}
		if i < len(p.ts) {
			if p.ts[i] == "" || p.sent[i] == string(js) {
				continue
			}
			if err := p.b.poster.Update(ctx, ch, p.ts[i], m); err != nil {
				p.b.log.Error("update a progress message", "thread", p.in.Key.String(), "turn", p.turnID, "err", err)
				continue
			}
			p.sent[i], p.out[i] = string(js), m
			continue
		}
		ts, err := p.b.poster.Post(ctx, ch, thread, m)
		if err != nil {
			// The poster already waited out 429s. Any other failure may
			// have posted anyway, and Slack has no idempotency key, so the
			// message is not tried again: a lost line is logged, a double
			// one would confuse the thread.
			p.b.log.Error("post a progress message", "thread", p.in.Key.String(), "turn", p.turnID, "err", err)
		}
		p.ts = append(p.ts, ts)
		p.sent = append(p.sent, string(js))
		p.out = append(p.out, m)
	}
}

// withoutActions is m without its Stop button.
func withoutActions(m render.Outgoing) render.Outgoing {
	m.Blocks = slices.DeleteFunc(slices.Clone(m.Blocks), func(b slack.Block) bool { return b.BlockType() == slack.MBTAction })
	return m
}

// unknownTool labels the metrics of a call to a tool that does not exist.
const unknownTool = "unknown"

// toolLabel is the metric label of a call to name. The model picks the
// name, and may be talked into inventing a new one on every call: each
// would be a series /metrics keeps and serves forever, holding whatever
// text the model chose. Only the tools the answerer offers are labelled by
// name; without that list, a short tool-like identifier is.
func toolLabel(name string, offered map[string]bool) string {
	if offered != nil {
		if offered[name] {
			return name
		}
		return unknownTool
	}
	if len(name) == 0 || len(name) > 40 || strings.ContainsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_')
	}) {
		return unknownTool
	}
	return name
}

// toolSet is names as a set; nil for none (not known yet).
func toolSet(names []string) map[string]bool {
	if names == nil {
		return nil
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}
