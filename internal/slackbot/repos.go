package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
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
	return len(b.cfg.Repos.ForChannel(in.Key.Channel)) > 0
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
func (b *Bot) bind(ctx context.Context, j *job) (binding, error) {
	in := j.in
	sess, ok, err := b.cfg.Store.Session(ctx, in.Key)
	if err != nil {
		return binding{}, fmt.Errorf("load the thread's session: %w", err)
	}
	channel := in.Key.Channel
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
	ans    Answerer
	lease  *repos.Lease
	// notes say what the answer's citations cannot show (repos.Checked),
	// for the footer.
	notes []string
}

// checkout leases repo for a turn and builds its agent. Release it when
// the turn ends.
func (b *Bot) checkout(ctx context.Context, repo string) (*checkout, error) {
	l, err := b.cfg.Repos.Acquire(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("lease repository %s: %w", repo, err)
	}
	ans, err := b.cfg.NewAnswerer(l.Workspace)
	if err != nil {
		l.Release()
		return nil, fmt.Errorf("build the agent over %s: %w", repo, err)
	}
	b.prefixOnce.Do(func() {
		if p, ok := ans.(prefixer); ok {
			b.system, b.tools = p.Prefix()
		}
	})
	return &checkout{repo: repo, commit: l.Commit, ans: ans, lease: l}, nil
}

func (c *checkout) release() {
	if c != nil {
		c.lease.Release()
	}
}

// cite rewrites the answer's citations against the checkout: permalinks at
// the turn's commit, flags for what is not there. If the checkout cannot
// be read the answer goes out as written, and the log says why.
func (b *Bot) cite(ctx context.Context, c *checkout, answer string) string {
	checked, err := c.lease.CheckAnswer(ctx, answer)
	if err != nil {
		b.log.Warn("check an answer's citations; posting it unchecked", "repo", c.repo, "commit", c.commit, "err", err)
		return answer
	}
	b.metrics.citations.WithLabelValues("valid").Add(float64(checked.Valid))
	b.metrics.citations.WithLabelValues("flagged").Add(float64(checked.Invalid))
	c.notes = checked.Notes
	return checked.Markdown
}

// link is the permalink for the file a successful call read, for its
// context line: read_file with the lines it showed, git_blame with the
// lines it blamed, list_files to the directory. Other calls name no one
// file, and a call that failed links nothing.
func (c *checkout) link(ctx context.Context, call tools.Call, res tools.Result) string {
	if res.IsError {
		return ""
	}
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
		Start  int    `json:"start"`
		End    int    `json:"end"`
		Commit string `json:"commit"`
	}
	if json.Unmarshal(call.Input, &a) != nil {
		return ""
	}
	switch call.Name {
	case tools.ReadFileName:
		if a.Path == "" {
			return ""
		}
		start, end := 0, 0
		if a.Offset > 1 || a.Limit > 0 || strings.Contains(res.Content, "; continue with offset=") {
			start, end = shownLines(res.Content)
		}
		return c.lease.Permalink(ctx, a.Path, start, end, false)
	case tools.GitBlameName:
		// git_blame may look at another commit; only the turn's own is
		// linked.
		if a.Path == "" || (a.Commit != "" && a.Commit != "HEAD" && (len(a.Commit) < 7 || !strings.HasPrefix(c.commit, a.Commit))) {
			return ""
		}
		return c.lease.Permalink(ctx, a.Path, a.Start, max(a.End, a.Start), false)
	case tools.ListFilesName:
		return c.lease.Permalink(ctx, a.Path, 0, 0, true)
	}
	return ""
}

// shownLines is the first and last line number of read_file's output,
// whose lines start "N\t"; 0, 0 when it shows none.
func shownLines(out string) (first, last int) {
	for line := range strings.SplitSeq(out, "\n") {
		num, _, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 {
			continue
		}
		if first == 0 {
			first = n
		}
		last = n
	}
	return first, last
}
