package session

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Ratings a person gives an answer.
const (
	RatingUp   = "up"
	RatingDown = "down"
)

// MaxFeedbackComment is the longest comment, in characters, a rating may
// carry: Slack's own cap on a text input, so nothing a person could type
// is refused, while a payload made up by hand cannot fill the store.
const MaxFeedbackComment = 3000

// maxFeedbackReason bounds the reason: one of a few short codes the
// service offers.
const maxFeedbackReason = 64

// Feedback is one person's rating of one answer: the turn that answered,
// who rated it, up or down, and for a rating down what was wrong with it
// (a short code, and what the person wrote).
type Feedback struct {
	TurnID  string
	User    string
	Rating  string // RatingUp or RatingDown
	Reason  string // what was wrong, as a short code; "" if not said
	Comment string // free text as the person typed it: untrusted, escape before showing
	Time    time.Time
}

// Rated is a rating with what it rates, for review.
type Rated struct {
	Feedback
	// Turn is the rated turn (its thread, question, steps and usage).
	Turn Turn
	// Repo and Commit are the thread's repository and its last answer's
	// commit when the rating was given: right after an answer, the
	// commit that answer read.
	Repo, Commit string
	// Later counts the questions asked in the thread after the rated
	// one, so the turn's messages can be found in the thread's history
	// counting questions from its end (llm.IsQuestion).
	Later int
}

// Feedbacks keeps people's ratings of answers with the turns they rate.
// A rating lives as long as its turn: it goes when the thread's session
// is purged, and giving one does not keep a thread from being purged.
// Replicas sharing a store share the ratings.
type Feedbacks interface {
	// Rate records f, replacing what the same user said of the same turn
	// before (rating, reason and comment together), with the store's now
	// as its time. An unknown turn gives ErrNotFound and records nothing:
	// a rating always names a turn the store has.
	Rate(ctx context.Context, f Feedback) error
	// FeedbackSince lists the ratings given at or after since, newest
	// first; at most limit of them, or all for limit 0 or less.
	FeedbackSince(ctx context.Context, since time.Time, limit int) ([]Rated, error)
}

var (
	_ Feedbacks = (*Memory)(nil)
	_ Feedbacks = (*SQLite)(nil)
	_ Feedbacks = (*Postgres)(nil)
)

// ErrBadFeedback is returned by Rate for a rating that is not up or down,
// or that lacks its turn or user, or whose reason or comment is too long.
var ErrBadFeedback = errors.New("bad feedback")

func checkFeedback(f Feedback) error {
	switch {
	case f.TurnID == "" || f.User == "":
		return fmt.Errorf("%w: a rating needs its turn and its user", ErrBadFeedback)
	case f.Rating != RatingUp && f.Rating != RatingDown:
		return fmt.Errorf("%w: rating %q is neither %q nor %q", ErrBadFeedback, f.Rating, RatingUp, RatingDown)
	case len(f.Reason) > maxFeedbackReason:
		return fmt.Errorf("%w: reason is %d bytes, more than %d", ErrBadFeedback, len(f.Reason), maxFeedbackReason)
	case utf8.RuneCountInString(f.Comment) > MaxFeedbackComment:
		return fmt.Errorf("%w: comment is longer than %d characters", ErrBadFeedback, MaxFeedbackComment)
	}
	return nil
}

// ratedColumns select what scanRated reads, SQLite and PostgreSQL alike;
// the query goes on with WHERE over f (feedback), t (turns) and s
// (sessions).
const ratedColumns = `f.user_id, f.rating, f.reason, f.comment, f.at, f.repo, f.commit_sha,
	(SELECT COUNT(*) FROM turns l WHERE l.session_id = t.session_id AND l.state <> 'continued' AND l.started > t.started),
	` + turnColumns + ` JOIN feedback f ON f.turn_id = t.id`

func scanRated(sc scanner) (Rated, error) {
	var r Rated
	var at int64
	t, err := scanTurn(prefixScanner{sc, []any{&r.User, &r.Rating, &r.Reason, &r.Comment, &at, &r.Repo, &r.Commit, &r.Later}})
	if err != nil {
		return Rated{}, err
	}
	r.Turn, r.TurnID, r.Time = t, t.ID, fromNanos(at)
	return r, nil
}

// prefixScanner scans its own destinations ahead of the caller's, so a
// row that starts with other columns can end in those scanTurn reads.
type prefixScanner struct {
	sc     scanner
	prefix []any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.sc.Scan(append(p.prefix[:len(p.prefix):len(p.prefix)], dest...)...)
}
