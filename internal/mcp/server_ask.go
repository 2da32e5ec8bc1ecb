package mcp

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/turn"
	budgets "github.com/askrepo/askrepo/internal/usage"
)

// AskName is the tool that runs the whole agent.
const AskName = "ask"

// Team is the team of every MCP conversation's session key; the channel
// is the caller's name (a token's, or "stdio"), so no token can continue
// another's conversation, and the thread is the conversation's ID.
const Team = session.MCPTeam

// maxQuestion is the longest question ask takes, in characters: a Slack
// message's limit. The agent reads the code itself; a longer question is
// most likely code pasted in, at the price of every request of the turn.
const maxQuestion = 40_000

// defaultTurnTimeout bounds an ask when Options.TurnTimeout is 0.
const defaultTurnTimeout = 10 * time.Minute

const askDescription = "Ask askrepo's own agent a question about a repository. It searches and reads the code itself " +
	"(the tool calls it made come back with the answer) and answers in Markdown whose file:line citations are checked " +
	"at the commit it read: a valid one is a permalink, a wrong one is flagged. Slower and costlier than the other tools; " +
	"use it for questions that need reading several files. The answer comes with a conversation: pass it back to ask a " +
	"follow-up that remembers the question and answer before."

// askArgs are ask's arguments.
type askArgs struct {
	Question     string `json:"question"`
	Repo         string `json:"repo"`
	Conversation string `json:"conversation"`
}

func askSchema(a *access) json.RawMessage {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"question":     map[string]any{"type": "string", "description": "The question, as you would ask a colleague who knows the code."},
			repoArg:        map[string]any{"type": "string", "description": repoDescription(a) + " A follow-up stays with its conversation's repository."},
			"conversation": map[string]any{"type": "string", "description": "The conversation an earlier ask returned, to ask a follow-up in it; leave out to start a new one."},
		},
		"required": []string{"question"},
	}
	out, _ := json.Marshal(schema)
	return out
}

// askResult is ask's structured result.
type askResult struct {
	// Answer is the agent's Markdown with its citations checked: valid
	// ones link to the repository's web view at Commit.
	Answer       string     `json:"answer"`
	Conversation string     `json:"conversation"`
	Repo         string     `json:"repo"`
	Commit       string     `json:"commit,omitempty"`
	Citations    []citation `json:"citations,omitempty"`
	ToolCalls    []toolCall `json:"tool_calls"`
	Usage        usage      `json:"usage"`
	Notes        []string   `json:"notes,omitempty"`
}

type citation struct {
	Citation string `json:"citation"`
	Valid    bool   `json:"valid"`
	URL      string `json:"url,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

type toolCall struct {
	Name    string `json:"name"`
	Args    string `json:"args"`
	Summary string `json:"summary"`
	Failed  bool   `json:"failed,omitempty"`
	Link    string `json:"link,omitempty"`
}

type usage struct {
	Steps            int `json:"steps"`
	PromptTokens     int `json:"prompt_tokens"`
	CachedTokens     int `json:"cached_prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func (s *Server) addAsk(srv *sdk.Server, a *access) {
	srv.AddTool(&sdk.Tool{Name: AskName, Description: askDescription, InputSchema: askSchema(a),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return s.serve(ctx, a, AskName, func(ctx context.Context) (*sdk.CallToolResult, string, error) {
				var in askArgs
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, "", refuse(errors.New("the arguments must be a JSON object with question, and optionally repo and conversation, as strings"))
				}
				return s.ask(ctx, a, in, newObserver(ctx, req))
			}), nil
		})
}

// conversationRE is the form of a conversation ID, newID(16).
var conversationRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{32}$`) })

// ask runs one turn of a conversation, new or continued.
func (s *Server) ask(ctx context.Context, a *access, in askArgs, obs *observer) (*sdk.CallToolResult, string, error) {
	question := strings.TrimSpace(in.Question)
	switch n := utf8.RuneCountInString(question); {
	case n == 0:
		return nil, "", refuse(errors.New("ask needs a question"))
	case n > maxQuestion:
		return nil, "", refuse(fmt.Errorf("the question is %d characters long, more than the %d askrepo takes; ask it in fewer words, and let askrepo read the code itself", n, maxQuestion))
	}
	key := session.Key{Team: Team, Channel: a.name, Thread: in.Conversation}
	if in.Conversation == "" {
		key.Thread = newID(16)
	}
	if !s.hold(key) {
		return nil, "", refuse(errors.New("this conversation is still answering an earlier ask; wait for its answer, then ask again"))
	}
	defer s.letGo(key)
	if !s.startAsk(a) {
		if s.held(a) >= s.share() {
			return nil, "", refuse(fmt.Errorf("this token is running %d asks already, its most at once; wait for one to answer, then ask again", s.share()))
		}
		return nil, "", refuse(fmt.Errorf("askrepo is answering %d questions already, its most at once; try again in a minute", cap(s.asks)))
	}
	defer s.endAsk(a)
	loaded, repo, err := s.conversation(ctx, a, key, in)
	if err != nil {
		return nil, repo, err
	}
	lease, err := s.acquire(ctx, a, repo)
	if err != nil {
		return nil, repo, err
	}
	defer lease.Release()
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.opts.TurnTimeout, defaultTurnTimeout))
	defer cancel()
	id := newID(8)
	log := s.log.With("token", a.name, "conversation", key.Thread, "turn", id, "repo", repo, "commit", gitexec.ShortCommit(lease.Commit))
	// The token is who asks: the turn's user is mcp:NAME, so a
	// per-person budget and bot usage --by user count each token alone
	// (an empty user would count everyone's turns), and no token shares a
	// Slack user's budget by being named like a user ID.
	res, err := s.opts.Turns.Run(ctx, turn.Request{Key: key, Session: loaded, Lease: lease, Repo: repo, User: asker(a.name),
		Question: question, TurnID: id, Observer: obs, Log: log})
	s.endTurn(id, res, err, log)
	if over, ok := errors.AsType[*budgets.OverBudget](err); ok {
		// A budget is used up: its sentence says which, and when it
		// resets. Nothing failed, and the model was not asked.
		return nil, repo, refuse(over)
	}
	s.metrics.spend.Count(repo, s.opts.Turns.ModelName(), res.Usage, err == nil)
	if err != nil {
		ref := newID(3)
		log.Error("mcp ask failed", "ref", ref, "err", err)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, repo, fmt.Errorf("the answer ran out of time (BOT_TURN_TIMEOUT); ask a narrower question (ref %s)", ref)
		}
		return nil, repo, fmt.Errorf("the answer failed; try again, or tell askrepo's operators the reference %s", ref)
	}
	if res.CheckErr != nil {
		log.Warn("check the answer's citations; returned unchecked", "err", res.CheckErr)
	}
	out := askResult{Answer: res.Checked.Markdown, Conversation: key.Thread, Repo: repo, Commit: lease.Commit,
		Citations: citations(res.Checked), ToolCalls: obs.list(), Notes: res.Checked.Notes,
		Usage: usage{Steps: res.Loop.Steps, PromptTokens: res.Usage.PromptTokens, CachedTokens: res.Usage.CachedPromptTokens, CompletionTokens: res.Usage.CompletionTokens}}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out.text()}}, StructuredContent: out}, repo, nil
}

// conversation loads the session an ask continues, or the empty one it
// starts, and the repository it reads. A conversation that is not the
// caller's, or about a repository the caller may not read, is unknown:
// the refusal tells nothing of it.
func (s *Server) conversation(ctx context.Context, a *access, key session.Key, in askArgs) (turn.Loaded, string, error) {
	if in.Conversation == "" {
		repo, err := a.resolve(in.Repo)
		if err != nil {
			return turn.Loaded{}, "", refuse(err)
		}
		return turn.Loaded{}, repo, nil
	}
	unknown := refuse(fmt.Errorf("unknown conversation %s; leave conversation out to start a new one", quoted(in.Conversation)))
	if !conversationRE().MatchString(in.Conversation) {
		return turn.Loaded{}, "", unknown
	}
	loaded, err := s.opts.Turns.Load(ctx, key)
	switch {
	case err != nil:
		return turn.Loaded{}, "", s.hidden(a, "load an ask's conversation", err)
	case !loaded.Found || !a.may(loaded.Session.Repo):
		return turn.Loaded{}, "", unknown
	case in.Repo != "" && in.Repo != loaded.Session.Repo:
		return turn.Loaded{}, "", refuse(fmt.Errorf("this conversation is about %s; leave repo out, or leave conversation out to ask about %s in a new one", loaded.Session.Repo, quoted(in.Repo)))
	}
	return loaded, loaded.Session.Repo, nil
}

// startAsk takes a place for a's ask among MaxAsks; false when none is
// free, or a holds its share of them already. Asks are refused rather
// than queued: the caller's client would wait without a word, and may
// time out and ask again.
func (s *Server) startAsk(a *access) bool {
	if s.asks == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[a.name] >= s.share() {
		return false
	}
	select {
	case s.asks <- struct{}{}:
		s.running[a.name]++
		return true
	default:
		return false
	}
}

func (s *Server) endAsk(a *access) {
	if s.asks == nil {
		return
	}
	s.mu.Lock()
	s.running[a.name]--
	s.mu.Unlock()
	<-s.asks
}

// share is the most asks one caller may run at once: with more than one
// token, half of MaxAsks (at least one), so that one token cannot take
// every place from the others; else all of them.
func (s *Server) share() int {
	if len(s.tokens) <= 1 {
		return cap(s.asks)
	}
	return max(1, cap(s.asks)/2)
}

// held is how many asks a is running.
func (s *Server) held(a *access) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[a.name]
}

// hold marks a conversation as answering; false when it already is. Two
// asks at once in one conversation would interleave their histories.
func (s *Server) hold(key session.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy[key] {
		return false
	}
	s.busy[key] = true
	return true
}

func (s *Server) letGo(key session.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, key)
}

// endTurn records how a turn the store has ended, so the conversation's
// next ask starts after it, even when the caller went away.
func (s *Server) endTurn(id string, res turn.Result, err error, log interface{ Warn(string, ...any) }) {
	if !res.Started {
		return
	}
	if err := s.opts.Store.EndTurn(context.Background(), id, turn.EndState(err), ""); err != nil {
		log.Warn("record the end of a turn", "err", err)
	}
}

func citations(c repos.Checked) []citation {
	var out []citation
	seen := map[string]bool{}
	for _, r := range c.Results {
		key := r.Citation.String()
		if r.Skipped || r.Err != nil || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, citation{Citation: key, Valid: r.Valid, URL: r.URL, Reason: r.Reason})
	}
	return out
}

// text is the result as a client without structured content shows it:
// the answer, and under it how to go on.
func (r askResult) text() string {
	at := r.Repo
	if r.Commit != "" {
		at += "@" + gitexec.ShortCommit(r.Commit)
	}
	return fmt.Sprintf("%s\n\n---\n%s · %d tool calls · conversation %s (pass it as conversation to ask a follow-up)\n",
		strings.TrimSpace(r.Answer), at, len(r.ToolCalls), r.Conversation)
}

// newID is n random bytes in hex.
func newID(n int) string {
	p := make([]byte, n)
	_, _ = rand.Read(p)
	return hex.EncodeToString(p)
}

// asker is the user a token's asks are counted under in the store: a name
// no Slack user ID can take (those are upper-case letters and digits).
func asker(token string) string { return "mcp:" + token }
