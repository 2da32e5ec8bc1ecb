package slackbot

import (
	"errors"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// This file ends a stream: with the answer, or without one.

// end stops the writer after its last flush.
func (s *stream) end() {
	s.once.Do(func() { close(s.done) })
	<-s.finished
}

// finish sends the rest of the answer and closes the stream with the
// footer and the feedback buttons. It reports false when streaming broke
// off, for the answer to go out as messages.
func (s *stream) finish(answer string, footer render.Footer, home []string) bool {
	if s.closed {
		return false
	}
	s.closed = true
	s.end()
	ctx, cancel := s.slackCtx()
	defer cancel()
	if rest := s.text.rest(answer, home); rest != "" {
		s.send(ctx, []slack.StreamChunk{slack.NewMarkdownTextChunk(rest)})
	}
	if s.broken != nil {
		s.stop(ctx, nil)
		return false
	}
	// A failure here costs the footer, not the answer: it is shown, and
	// posting it again would double it.
	end := render.StreamEnd(footer, s.turnID)
	if err := s.stop(ctx, end); slackCode(err) == errStreamClosed && s.rollover(ctx, false) {
		// Slack closed it after the last text: the footer and the
		// buttons go under the answer in a message of their own.
		s.stop(ctx, end)
	}
	return true
}

// close ends a turn that has no answer: what was streamed stays, and the
// thread hears why in a message, as in the message UI.
func (s *stream) close() {
	if s.closed {
		return
	}
	s.closed = true
	s.end()
	ctx, cancel := s.slackCtx()
	defer cancel()
	s.stop(ctx, nil)
	if s.appends == 0 && s.msgLen == 0 && s.opened == 1 {
		// Nothing was shown (the checkout failed, the model refused at
		// once): an empty message would only stand above the reason.
		if _, _, err := s.b.api.DeleteMessageContext(ctx, s.in.Key.Channel, s.ts); err != nil {
			s.log.Warn("delete an empty streamed message", "ts", s.ts, "err", err)
		}
	}
}

// slackCode is Slack's error code in err, "" for other errors.
func slackCode(err error) string {
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
		return se.Err
	}
	if sc, ok := errors.AsType[slack.StatusCodeError](err); ok && sc.Code == 404 {
		return "unknown_method"
	}
	return ""
}
