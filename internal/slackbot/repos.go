package slackbot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/turn"
)

// Outcomes of a question that is not answered because of its repository:
// the bot says why in the thread, and reads nothing.
const (
	outcomeNotEnabled  = "no_repository"      // the channel may read none
	outcomeUnknownRepo = "unknown_repository" // it named one this channel may not read
	outcomeOtherRepo   = "other_repository"   // a follow-up named another repo than the thread's
	outcomeNoQuestion  = "no_question"        // "in payments:" and nothing after it
)

const noteNotEnabled = "Sorry, I am not enabled here."

// repoEnabled reports whether some repository serves in's channel.
func (b *Bot) repoEnabled(in inbound) bool {
	return len(b.cfg.Repos.ForChannel(in.repoChannel())) > 0
}

// binding is the repository a turn answers from, decided before anything
// is read.
type binding struct {
	repo     string
	question string // the question, without "in NAME:"
	// refusal, when set, is all the thread hears: the question is not
	// answered (outcome says why) and nothing is read.
	refusal string
	outcome string
}

// bind picks the repository of a job. A new thread gets the channel's
// default or the repo the question names; a thread with a session stays on
// its repo, and a follow-up that names another is told to start a new
// thread, since one thread is one conversation about one repository.
//
// loaded is the thread's session, as the turn read it.
func (b *Bot) bind(j *job, loaded turn.Loaded) (binding, error) {
	in := j.in
	sess, ok := loaded.Session, loaded.Found
	channel := in.repoChannel()
	if j.recovered != nil {
		// Its question was stored without the choice; its repo is the
		// session's.
		if !ok {
			return binding{}, fmt.Errorf("resume turn %s: the thread's session is gone (purged?)", j.recovered.turn.ID)
		}
		return binding{repo: b.boundRepo(sess.Repo, channel), question: in.Text}, nil
	}
	repo, question, rerr := b.cfg.Repos.Resolve(channel, in.Text)
	var unknown *repos.UnknownRepoError
	if ok && sess.Repo != "" {
		bound := b.boundRepo(sess.Repo, channel)
		if !slices.Contains(b.cfg.Repos.ForChannel(channel), bound) {
			return binding{refusal: fmt.Sprintf("This thread is about %s, which this channel cannot read any more; please ask in a new thread.", bound), outcome: outcomeNotEnabled}, nil
		}
		switch {
		case errors.As(rerr, &unknown):
			return binding{refusal: sentence(rerr.Error()) + fmt.Sprintf(" This thread stays on %s; to ask about another repository, start a new thread.", bound), outcome: outcomeUnknownRepo}, nil
		case rerr != nil:
			return binding{refusal: noteNotEnabled, outcome: outcomeNotEnabled}, nil
		case repo != bound && question != strings.TrimSpace(in.Text):
			return binding{refusal: fmt.Sprintf("This thread is about %s, and I answer about one repository per thread: please ask about %s in a new thread (mention me at the top level with \"in %s:\").", bound, repo, repo), outcome: outcomeOtherRepo}, nil
		case repo != bound:
			question = strings.TrimSpace(in.Text) // no choice named: the whole text
		}
		repo = bound
	} else {
		switch {
		case errors.Is(rerr, repos.ErrNoRepo):
			return binding{refusal: noteNotEnabled, outcome: outcomeNotEnabled}, nil
		case errors.As(rerr, &unknown):
			return binding{refusal: sentence(rerr.Error()), outcome: outcomeUnknownRepo}, nil
		case rerr != nil:
			return binding{}, fmt.Errorf("pick the repository: %w", rerr)
		}
	}
	if question == "" {
		return binding{refusal: fmt.Sprintf("Ask me a question about %s after \"in %s:\".", repo, repo), outcome: outcomeNoQuestion}, nil
	}
	return binding{repo: repo, question: question}, nil
}

// boundRepo is the repository a stored session names, as configured now. A
// session from the one-repository setup may carry its REPO_NAME as it was
// shown ("acme/widget"), which became the repo name "acme-widget".
func (b *Bot) boundRepo(stored, channel string) string {
	choices := b.cfg.Repos.ForChannel(channel)
	if slices.Contains(choices, stored) {
		return stored
	}
	for _, c := range choices {
		if repos.Single(stored, "", nil).Name == c {
			return c
		}
	}
	return stored
}

// sentence capitalises the first letter of s and ends it with a period.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// checkout is the repository as one turn sees it: a lease held from the
// turn's start to its end, so every tool call, the citations and the
// footer agree on one commit.
type checkout struct {
	repo   string
	commit string
	lease  *repos.Lease
	// notes say what the answer's citations cannot show (repos.Checked),
	// for the footer.
	notes []string
}

// checkout leases repo for a turn. Release it when the turn ends.
func (b *Bot) checkout(ctx context.Context, repo string) (*checkout, error) {
	l, err := b.cfg.Repos.Acquire(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("lease repository %s: %w", repo, err)
	}
	return &checkout{repo: repo, commit: l.Commit, lease: l}, nil
}

func (c *checkout) release() {
	if c != nil {
		c.lease.Release()
	}
}
