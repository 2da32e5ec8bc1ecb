package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/termsafe"
	"github.com/askrepo/askrepo/internal/tools"
)

// feedbackLimit caps how many ratings one listing shows.
const feedbackLimit = 500

// excerptRunes is how much of a question or an answer the listing
// quotes; maxFieldRunes bounds any one field (a comment is up to 3000).
const (
	excerptRunes  = 280
	maxFieldRunes = 4000
)

// review is one rating as `bot feedback` shows it: what was rated, by
// whom and why, with what the turn asked, answered and looked at.
type review struct {
	Time      time.Time   `json:"time"`
	User      string      `json:"user"`
	Rating    string      `json:"rating"`
	Reason    string      `json:"reason,omitempty"`
	Comment   string      `json:"comment,omitempty"`
	Thread    session.Key `json:"thread"`
	Turn      string      `json:"turn"`
	Repo      string      `json:"repo"`
	Commit    string      `json:"commit"`
	Question  string      `json:"question"`
	Answer    string      `json:"answer"`                   // an excerpt
	ToolCalls []string    `json:"tool_calls"`               // each in its short form
	Missing   string      `json:"not_in_history,omitempty"` // why Answer and ToolCalls are empty
}

// runFeedback lists the ratings people gave answers since a while ago,
// newest first, for review. Everything in it (questions, answers,
// comments) was written by people or the model: stdout is a screen, which
// escapes it for the terminal, and each field is kept to one line so no
// comment can pass for another entry. sinceFlag is --since, checked here.
func runFeedback(ctx context.Context, cfg config.Config, sinceFlag string, asJSON bool, stdout io.Writer) error {
	since, err := parseSince(sinceFlag)
	if err != nil {
		return usageError{err.Error()}
	}
	if db, missing := sqliteStoreMissing(cfg); missing {
		fmt.Fprintf(stdout, "No feedback: no store at %s (it is created when bot serve first runs with BOT_DATA_DIR=%s).\n", db, cfg.DataDir)
		return nil
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	fs, ok := store.(session.Feedbacks)
	if !ok {
		return fmt.Errorf("the %T store keeps no feedback", store)
	}
	rated, err := fs.FeedbackSince(ctx, time.Now().Add(-since), feedbackLimit)
	if err != nil {
		return err
	}
	reviews, err := collectReviews(ctx, store, rated)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, reviews)
	}
	if len(reviews) == 0 {
		fmt.Fprintf(stdout, "No feedback in the last %s.\n", since)
		return nil
	}
	for _, r := range reviews {
		printReview(stdout, r)
	}
	return nil
}

// collectReviews completes each rating with its turn's answer and tool
// calls, read from its thread's history (each thread once).
func collectReviews(ctx context.Context, store session.Store, rated []session.Rated) ([]review, error) {
	reg := tools.NewRegistry(tools.Default(nil, tools.Options{})...)
	histories := map[session.Key][]llm.Message{}
	out := make([]review, 0, len(rated))
	for _, r := range rated {
		h, seen := histories[r.Turn.Key]
		if !seen {
			s, _, err := store.Session(ctx, r.Turn.Key)
			if err != nil {
				return nil, fmt.Errorf("read the history of %s: %w", r.Turn.Key, err)
			}
			h = s.History
			histories[r.Turn.Key] = h
		}
		rv := review{
			Time: r.Time, User: r.User, Rating: r.Rating, Reason: r.Reason, Comment: r.Comment,
			Thread: r.Turn.Key, Turn: r.TurnID, Repo: r.Repo, Commit: r.Commit, Question: r.Turn.Question,
			ToolCalls: []string{},
		}
		msgs, found := turnMessages(h, r.Later, r.Turn.Question)
		if !found {
			rv.Missing = "the thread's history no longer holds this turn (compacted or purged)"
		}
		for _, m := range msgs {
			for _, c := range m.ToolCalls {
				rv.ToolCalls = append(rv.ToolCalls, oneLine(c.Name, 80)+" "+reg.Describe(tools.Call{Name: c.Name, Input: json.RawMessage(c.Arguments)}))
			}
			if m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 && strings.TrimSpace(m.Content) != "" {
				rv.Answer = oneLine(m.Content, excerptRunes)
			}
		}
		out = append(out, rv)
	}
	return out, nil
}

// turnMessages finds a turn's messages in its thread's history: from its
// question, later questions from the end, to the next question. The
// question found must be the turn's (compaction may have folded it into a
// summary); found is false when it is not there.
func turnMessages(h []llm.Message, later int, question string) ([]llm.Message, bool) {
	end := len(h)
	for i := len(h) - 1; i >= 0; i-- {
		if !llm.IsQuestion(h[i]) {
			continue
		}
		if later > 0 {
			later--
			end = i
			continue
		}
		if !strings.HasSuffix(h[i].Content, llm.QuestionText(question)) {
			return nil, false
		}
		return h[i+1 : end], true
	}
	return nil, false
}

func printReview(w io.Writer, r review) {
	mark := "👍 up"
	if r.Rating == session.RatingDown {
		mark = "👎 down"
	}
	head := fmt.Sprintf("%s  %s  by %s", r.Time.Local().Format(time.DateTime), mark, oneLine(r.User, 64))
	if r.Reason != "" {
		head += "  (" + oneLine(r.Reason, 64) + ")"
	}
	fmt.Fprintln(w, head)
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "  %-8s %s\n", name, oneLine(value, maxFieldRunes))
		}
	}
	field("thread", r.Thread.String()+", turn "+r.Turn)
	field("repo", r.Repo+" @ "+gitexec.ShortCommit(r.Commit))
	field("asked", oneLine(r.Question, excerptRunes))
	field("answer", r.Answer)
	field("tools", strings.Join(r.ToolCalls, "; "))
	field("history", r.Missing)
	if r.Comment != "" {
		field("comment", strconv.Quote(r.Comment))
	}
	fmt.Fprintln(w)
}

// writeJSON writes v as indented JSON in which every character a
// terminal would obey is a \u escape: the text stays valid JSON, and
// means the same, while nothing in it acts on the terminal it is printed
// to.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return errors.Join(errors.New("encode the feedback as JSON"), err)
	}
	out := make([]byte, 0, buf.Len())
	for _, r := range buf.String() {
		if r == '\n' || !termsafe.Unsafe(r) {
			out = utf8.AppendRune(out, r)
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2) // a surrogate pair, past the BMP
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	_, err := w.Write(out)
	return err
}
