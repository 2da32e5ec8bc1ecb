package slacktest

import "fmt"

// FeedbackClick is a person pressing one of the feedback buttons
// (a context_actions block's feedback_buttons) under a message.
type FeedbackClick struct {
	User      string
	Channel   string
	MessageTS string
	// Positive picks the positive button (👍), else the negative one.
	Positive bool
}

// ClickFeedback sends the block_actions Slack delivers for c: the action
// is the feedback_buttons element with the clicked button's value and
// text, as the message holds them. It fails if the message has no
// feedback buttons: a person can only press what is there.
func (s *Server) ClickFeedback(c FeedbackClick) (string, error) {
	b, err := s.feedbackClick(c)
	if err != nil {
		return "", err
	}
	return s.ClickButton(b), nil
}

// ClickFeedbackTo is ClickFeedback on connection conn.
func (s *Server) ClickFeedbackTo(conn int, c FeedbackClick) (string, error) {
	b, err := s.feedbackClick(c)
	if err != nil {
		return "", err
	}
	return s.ClickButtonTo(conn, b)
}

func (s *Server) feedbackClick(c FeedbackClick) (ButtonClick, error) {
	m, ok := s.Message(c.Channel, c.MessageTS)
	if !ok {
		return ButtonClick{}, fmt.Errorf("slacktest: no message %s in %s", c.MessageTS, c.Channel)
	}
	which := "negative_button"
	if c.Positive {
		which = "positive_button"
	}
	for _, blk := range m.Blocks {
		if blk["type"] != "context_actions" {
			continue
		}
		els, _ := blk["elements"].([]any)
		for _, e := range els {
			el, _ := e.(map[string]any)
			if el["type"] != "feedback_buttons" {
				continue
			}
			btn, _ := el[which].(map[string]any)
			text, _ := btn["text"].(map[string]any)
			b := ButtonClick{User: c.User, Channel: c.Channel, MessageTS: c.MessageTS, ThreadTS: m.ThreadTS, Type: "feedback_buttons"}
			b.ActionID, _ = el["action_id"].(string)
			b.BlockID, _ = blk["block_id"].(string)
			b.Value, _ = btn["value"].(string)
			b.Text, _ = text["text"].(string)
			return b, nil
		}
	}
	return ButtonClick{}, fmt.Errorf("slacktest: message %s in %s has no feedback buttons (blocks %v)", c.MessageTS, c.Channel, m.BlockTypes())
}
