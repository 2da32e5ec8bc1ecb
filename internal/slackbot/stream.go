package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tracing"
	"github.com/askrepo/askrepo/internal/turn"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// streamPartPrefix marks a streamed message among a turn's recorded parts
// (Store.AddPart): the message UI counts only the others as answer parts
// already posted, and a restart closes these.
const streamPartPrefix = "s:"

// stream is the turn.Observer of one turn in the streamed UI: one
// streamed message in the thread (more when the answer outgrows one, or
// Slack closes it) holds the tool calls as task cards and the answer as
// the model writes it. Chunks are queued as they come and a writer
// goroutine sends them, coalesced to one chat.appendStream per
// StreamInterval, so that a busy turn stays within the method's rate tier.
type stream struct {
	b      *Bot
	in     inbound
	turnID string
	turn   context.Context
	// calls is the context the stream's calls are made under: the bot's,
	// so they outlive a Stop or a timeout, carrying the turn's trace.
	calls  context.Context
	log    *slog.Logger
	counts *turnCounts
	text   *streamText

	kick     chan struct{}
	urgent   chan struct{} // cuts the writer's wait short, once
	done     chan struct{}
	finished chan struct{}
	once     sync.Once

	mu    sync.Mutex
	queue []slack.StreamChunk // waiting for the writer, in order

	// Owned by the writer (and by finish, after the writer ended).
	ts      string          // the message being streamed
	msgLen  int             // characters of Markdown in it
	msgText strings.Builder // its text appended (not the note it started with)
	parts   int             // next part index in the store
	broken  error           // streaming failed for good: the answer goes out as messages
	// unrecorded are records of streamed messages not yet in the turn's
	// parts (see streamparts.go).
	unrecorded []string
	closed     bool // finish or close ended it
	opened     int  // messages started
	appends    int  // appends Slack took
}

var _ turn.Observer = (*stream)(nil)

// errStreamClosed is Slack's answer to an append to a message it no
// longer streams: stopped, or open longer than it allows.
const errStreamClosed = "message_not_in_streaming_state"

// startStream starts the turn's streamed message, with note (if any) as
// its first text. An error means nothing was shown: the turn falls back.
// turnCtx is the turn's own context: once it ends (a stop, a takeover),
// a message Slack closed is not continued in a new one. parts are the
// turn's recorded parts, from before a restart.
func (b *Bot) startStream(ctx, turnCtx context.Context, in inbound, turnID string, parts []string, note string, log *slog.Logger) (*stream, error) {
	_, _, done := streamRecords(parts)
	s := &stream{
		b: b, in: in, turnID: turnID, log: log, parts: len(parts), turn: turnCtx,
		calls:    tracing.Carry(ctx, b.slackCtx),
		counts:   newTurnCounts(b),
		kick:     make(chan struct{}, 1),
		urgent:   make(chan struct{}, 1),
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	s.text = newStreamText(s, note, done)
	if err := s.open(ctx, note); err != nil {
		return nil, err
	}
	go s.write()
	return s, nil
}

// open starts a new streamed message in the thread and records it.
func (s *stream) open(ctx context.Context, text string) error {
	opts := []slack.MsgOption{
		slack.MsgOptionTS(s.in.Key.Thread),
		slack.MsgOptionTaskDisplayMode(slack.TaskDisplayMode(s.b.cfg.Tasks)),
	}
	if !s.in.IM {
		// Outside a DM Slack requires whom the stream is for.
		opts = append(opts, slack.MsgOptionRecipientUserID(s.in.User), slack.MsgOptionRecipientTeamID(s.team()))
	}
	if text != "" {
		opts = append(opts, slack.MsgOptionMarkdownText(text))
	}
	var ts string
	err := s.retry(ctx, "chat.startStream", func(ctx context.Context) (err error) {
		_, ts, err = s.b.api.StartStreamContext(ctx, s.in.Key.Channel, opts...)
		return err
	})
	if err != nil {
		return err
	}
	s.ts, s.msgLen = ts, render.StreamLen(text)
	s.msgText.Reset()
	s.opened++
	s.b.metrics.streamMessages.Inc()
	s.unrecorded = append(s.unrecorded, streamPartPrefix+ts)
	s.record(ctx)
	return nil
}

// record writes the streamed messages not yet in the store to the turn's
// parts, for a restart to close them. The first is started before the
// runner stores the turn; it is recorded at the first flush after.
func (s *stream) record(ctx context.Context) {
	for len(s.unrecorded) > 0 {
		// Its own deadline: the message is out, and a restart must find
		// it to close it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := s.b.cfg.Store.AddPart(rctx, s.turnID, s.parts, s.unrecorded[0])
		cancel()
		if errors.Is(err, session.ErrNotFound) {
			return // not stored yet
		}
		if err != nil {
			s.log.Warn("record a streamed message; a restart may leave it open", "ts", s.unrecorded[0], "err", err)
		}
		s.unrecorded = s.unrecorded[1:]
		s.parts++
	}
}

func (s *stream) team() string {
	if s.in.Key.Team != "" {
		return s.in.Key.Team
	}
	return s.b.self.TeamID
}

// retry makes one Slack call, waiting out rate limits: Slack did not act
// on a call it answered 429, so sending it again shows nothing twice.
func (s *stream) retry(ctx context.Context, method string, call func(context.Context) error) error {
	for {
		// Each attempt is a span of the turn's trace, as the poster's
		// calls are.
		cctx, end := s.b.cfg.Tracer.Call(ctx, method, tracing.Attr{Key: "slack.channel", Value: s.in.Key.Channel})
		err := call(cctx)
		end(err)
		if err == nil {
			return nil
		}
		wait, limited := s.b.poster.rateLimited(err)
		if !limited {
			s.b.metrics.slackErrors.WithLabelValues(method).Inc()
			return fmt.Errorf("%s in %s: %w", method, s.in.Key.Channel, err)
		}
		s.b.metrics.slackRateLimited.WithLabelValues(method).Inc()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s in %s: %w", method, s.in.Key.Channel, ctx.Err())
		}
	}
}

func (s *stream) ToolStarted(c turn.Call) {
	s.counts.toolStarted()
	// What the model wrote before asking for tools was not the answer:
	// it stays shown as it is, and the answer starts afresh.
	s.text.endStep(c.Step)
	task := slack.NewTaskUpdateChunk(c.ID, render.TaskField(c.Name+" "+c.Brief))
	task.Status = slack.TaskCardStatusInProgress
	s.push(task)
}

func (s *stream) ToolDone(c turn.Call) {
	s.counts.toolDone(c)
	task := slack.NewTaskUpdateChunk(c.ID, render.TaskField(c.Name+" "+c.Brief))
	task.Status = slack.TaskCardStatusComplete
	if c.Failed {
		task.Status = slack.TaskCardStatusError
	}
	task.Details = render.TaskField(c.Summary)
	if c.Link != "" {
		task.Sources = []slack.TaskCardSource{slack.NewTaskCardSource(c.Link, render.TaskField(c.Brief))}
	}
	s.push(task)
}

func (s *stream) StepDone(st turn.Step) { s.counts.stepDone(st) }

func (s *stream) push(c slack.StreamChunk) {
	s.mu.Lock()
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	s.poke()
}

// hurry has the writer send now rather than at the end of its interval:
// for the answer's first text, which the asker is waiting for.
func (s *stream) hurry() {
	select {
	case s.urgent <- struct{}{}:
	default:
	}
	s.poke()
}

func (s *stream) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *stream) write() {
	defer close(s.finished)
	for {
		select {
		case <-s.kick:
		case <-s.done:
			s.flush()
			return
		}
		s.flush()
		t := time.NewTimer(s.b.cfg.StreamInterval)
		select {
		case <-t.C:
		case <-s.urgent:
			t.Stop()
		case <-s.done:
			t.Stop()
			s.flush()
			return
		}
	}
}

// slackCtx bounds the stream's calls: they outlive a Stop or a timeout,
// since the thread must end up right, but not the grace after a shutdown.
func (s *stream) slackCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.calls, time.Minute)
}

// flush sends what is queued, with the text verified so far.
func (s *stream) flush() {
	s.record(s.b.slackCtx)
	s.text.advance()
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	s.mu.Unlock()
	if len(q) > 0 {
		ctx, cancel := s.slackCtx()
		defer cancel()
		s.send(ctx, q)
	}
}

// send appends chunks to the message, moving on to a new message when its
// Markdown would pass what one holds or Slack closed it.
func (s *stream) send(ctx context.Context, chunks []slack.StreamChunk) {
	var batch []slack.StreamChunk
	batchLen, batchText := 0, ""
	for _, c := range coalesce(chunks) {
		md, ok := c.(slack.MarkdownTextChunk)
		if !ok {
			batch = append(batch, c)
			continue
		}
		text := md.Text
		for text != "" && s.broken == nil {
			head, tail := render.CutStreamFenced(s.msgText.String()+batchText, text, render.MaxStreamChars-s.msgLen-batchLen)
			if head != "" {
				batch = append(batch, slack.NewMarkdownTextChunk(head))
				batchLen += render.StreamLen(head)
				batchText += head
			}
			if tail == "" {
				break
			}
			// The message is full: what fits goes to it, the rest to the next.
			s.appendBatch(ctx, batch, batchLen)
			batch, batchLen, batchText = nil, 0, ""
			s.rollover(ctx, true)
			text = tail
		}
	}
	s.appendBatch(ctx, batch, batchLen)
}

// coalesce joins neighbouring text chunks, so that an append carries one.
func coalesce(chunks []slack.StreamChunk) []slack.StreamChunk {
	var out []slack.StreamChunk
	for _, c := range chunks {
		if md, ok := c.(slack.MarkdownTextChunk); ok && len(out) > 0 {
			if prev, ok := out[len(out)-1].(slack.MarkdownTextChunk); ok {
				out[len(out)-1] = slack.NewMarkdownTextChunk(prev.Text + md.Text)
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

func (s *stream) appendBatch(ctx context.Context, batch []slack.StreamChunk, n int) {
	if len(batch) == 0 || s.broken != nil {
		return
	}
	pace := s.b.paces.bucket(s.team(), s.b.cfg.AppendsPerMinute)
	for attempt := 0; ; attempt++ {
		err := s.retry(ctx, "chat.appendStream", func(ctx context.Context) error {
			if err := pace.wait(ctx); err != nil {
				return err
			}
			_, _, err := s.b.api.AppendStreamContext(ctx, s.in.Key.Channel, s.ts, slack.MsgOptionChunks(batch...))
			return err
		})
		if err == nil {
			s.msgLen += n
			for _, c := range batch {
				if md, ok := c.(slack.MarkdownTextChunk); ok {
					s.msgText.WriteString(md.Text)
				}
			}
			s.appends++
			s.b.metrics.streamAppends.Inc()
			if n > 0 {
				s.text.appended()
			}
			return
		}
		if slackCode(err) == errStreamClosed && attempt == 0 && s.rollover(ctx, false) {
			// Slack closed the message on its own (its time limit, or a
			// stop): nothing of this batch was shown; it goes to the next.
			continue
		}
		s.fail(err)
		return
	}
}

// rollover closes the message (when Slack has not) and opens the next,
// reporting whether there is one.
func (s *stream) rollover(ctx context.Context, close bool) bool {
	if s.broken != nil || errors.Is(context.Cause(ctx), context.Canceled) {
		return false
	}
	if s.turn.Err() != nil && !close {
		// Slack closed it after the turn was stopped or taken over: the
		// stop closed it, or the process that took the turn did.
		s.fail(fmt.Errorf("the stream was closed after the turn ended: %w", context.Cause(s.turn)))
		return false
	}
	if close {
		s.stop(ctx, nil)
	}
	// Its text is final now: a restart shows none of it again.
	s.unrecorded = append(s.unrecorded, doneRecord(s.ts, s.msgText.String()))
	if err := s.open(ctx, ""); err != nil {
		s.fail(err)
		return false
	}
	return true
}

// stop ends the current message with blocks under its text. A message
// Slack already closed shows what it was sent; the error says so.
func (s *stream) stop(ctx context.Context, blocks []slack.Block) error {
	var opts []slack.MsgOption
	if len(blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(blocks...))
	}
	err := s.retry(ctx, "chat.stopStream", func(ctx context.Context) error {
		_, _, err := s.b.api.StopStreamContext(ctx, s.in.Key.Channel, s.ts, opts...)
		return err
	})
	if err != nil && slackCode(err) != errStreamClosed {
		s.log.Warn("stop a streamed message", "ts", s.ts, "err", err)
	}
	return err
}

func (s *stream) fail(err error) {
	if s.broken == nil {
		s.broken = err
		s.log.Warn("streaming broke off; the answer goes out as messages", "err", err)
	}
}
