package session

import (
	"context"
	"errors"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// Key identifies a thread: one thread is one session.
type Key struct {
	Team    string `json:"team"`
	Channel string `json:"channel"`
	Thread  string `json:"thread"` // thread_ts, or the ts of the message that started it
}

// String is a stable, log-safe form of the key.
func (k Key) String() string { return k.Team + "/" + k.Channel + "/" + k.Thread }

// Session is one thread's conversation with the agent.
type Session struct {
	Key     Key
	Repo    string // name of the repository it answers from
	Commit  string // commit of the last turn's checkout, if known
	History []llm.Message
	Created time.Time
	Updated time.Time
	Usage   llm.Usage // totals over all turns
	Turns   int       // completed turns
}

// TurnState is where a turn stands.
type TurnState string

const (
	TurnRunning     TurnState = "running"
	TurnDone        TurnState = "done"
	TurnFailed      TurnState = "failed"
	TurnInterrupted TurnState = "interrupted" // cut by shutdown or crash; to be resumed or re-run
	TurnStopped     TurnState = "stopped"     // cancelled by a person
	// TurnContinued ends a turn that was cut off and handed to a new turn
	// by ContinueTurn; the new turn carries the answer.
	TurnContinued TurnState = "continued"
)

// Turn is one question and the work that answers it.
type Turn struct {
	ID       string
	Key      Key
	State    TurnState
	User     string // Slack user who asked
	Question string // the question as asked (mention stripped)
	// Repo is the repository the turn answers from (StartTurn's repo) and
	// Model the model it asked: what usage is counted by.
	Repo    string
	Model   string
	MsgTS   string // ts of the message that asked, for replies and dedupe
	Started time.Time
	Ended   time.Time
	Steps   int
	Usage   llm.Usage
	ErrRef  string // short reference shown to people and logged with the error
	// Parts are the Slack ts of the answer's messages posted so far, in
	// order (a long answer is several messages), so a turn cut off
	// between two of them posts only the rest.
	Parts []string
}

// Inbox keeps the events Slack delivered until the bot has handed them on
// (to a thread's queue, a started turn, or a deliberate drop). An event is
// recorded before Slack is told it arrived: Slack never redelivers an
// acknowledged event, so one that lived only in a process's memory would
// die with the process. Its key is also the event's dedupe key, across
// processes: a redelivery, or the same message delivered to two
// replicas, is recorded once.
//
// An event is held by the process that received it, until a time from the
// store's clock; once the hold has passed and the event is still not
// handled, ClaimReceived hands it to another process (or the next start).
type Inbox interface {
	// Receive records an event's data under key, held by owner until
	// now+hold, unless key was recorded less than ttl ago; first reports
	// whether this call recorded it. The key is remembered for ttl whether
	// or not its event is handled; an event still not handled after ttl
	// is given up.
	Receive(ctx context.Context, key string, data []byte, owner string, hold, ttl time.Duration) (first bool, err error)
	// Handled marks key's event handed on, so it is never claimed again.
	// An unknown key is not an error.
	Handled(ctx context.Context, key string) error
	// ClaimReceived takes for owner, until now+hold, every event not
	// handled whose hold has passed, and returns them in the order they
	// were received. Of processes claiming at once, each event goes to
	// exactly one.
	ClaimReceived(ctx context.Context, owner string, hold time.Duration) ([]Received, error)
}

// Received is an event recorded by Inbox.Receive and not yet handled.
type Received struct {
	Key      string
	Data     []byte // as the service encoded it; the store does not read it
	Received time.Time
}

// ErrNotFound is returned for a turn or session that does not exist.
var ErrNotFound = errors.New("not found")

// ErrTurnExists is returned by StartTurn for a turn ID already recorded, so a
// redelivered event cannot start the same turn twice.
var ErrTurnExists = errors.New("turn already exists")

// ErrTurnEnded is returned when a turn that is done, failed or stopped is
// written to (AppendStep, EndTurn): a run cancelled by a person may still
// finish a step, and that step must not reach the history after the fact.
var ErrTurnEnded = errors.New("turn already ended")

// ErrTooLarge is returned when one turn alone would exceed the store's
// message limit; older turns are dropped before that happens.
var ErrTooLarge = errors.New("turn too large to store")

// Ended reports whether s is a final state (done, failed, stopped or
// continued).
func (s TurnState) Ended() bool {
	return s == TurnDone || s == TurnFailed || s == TurnStopped || s == TurnContinued
}

// Store persists sessions, turns and event dedupe keys. Implementations are
// safe for concurrent use. Each method is atomic: a turn's writes that must
// go together are one call.
//
// Times (Created, Updated, Started, Ended, dedupe expiry) come from the
// store's own clock, injectable for tests; a Turn passed to StartTurn with a
// zero Started gets the store's now. Every write to a session or its turns
// moves Session.Updated, which is what Purge measures idleness by.
type Store interface {
	// Session returns the thread's session; ok is false if there is none.
	Session(ctx context.Context, key Key) (s Session, ok bool, err error)
	// SessionInfo is Session without the history: for a question that
	// needs only whether the thread has a session, or its repo, commit
	// and totals, without reading every message of it.
	SessionInfo(ctx context.Context, key Key) (s Session, ok bool, err error)
	// StartTurn records t as running, creating the session (with repo) if
	// needed, and appends userMsg to the history. An existing session keeps
	// its repo. A turn ID seen before gives ErrTurnExists.
	StartTurn(ctx context.Context, t Turn, repo string, userMsg llm.Message) error
	// AppendStep appends one completed step's messages to the turn's session
	// history, counts the step and adds usage to the turn and the session
	// totals. Unknown turn: ErrNotFound; ended turn: ErrTurnEnded.
	AppendStep(ctx context.Context, turnID string, msgs []llm.Message, usage llm.Usage) error
	// EndTurn sets the turn's final state (done, failed or stopped) and its
	// end time; a done turn counts in Session.Turns. Ending an ended turn
	// gives ErrTurnEnded and changes nothing, so Turns counts each turn once.
	EndTurn(ctx context.Context, turnID string, state TurnState, errRef string) error
	// SetTurnState changes the state of a turn without ending it (for
	// instance running → interrupted at shutdown). An ended turn gives
	// ErrTurnEnded and stays ended: a process that lost its turn to
	// ContinueTurn cannot bring it back.
	SetTurnState(ctx context.Context, turnID string, state TurnState) error
	// ContinueTurn hands an unfinished turn (running or interrupted) over
	// to a new turn next that finishes it: old ends as TurnContinued and
	// next starts running in old's session with old's user, question,
	// message ts, steps and usage; the history is left as it is. It is the
	// claim that keeps a cut-off turn from being answered twice: of
	// concurrent calls for one old turn exactly one succeeds, the others
	// (and any later write to old) get ErrTurnEnded. Unknown old:
	// ErrNotFound; next.ID seen before: ErrTurnExists.
	ContinueTurn(ctx context.Context, oldID string, next Turn) error
	// ReplaceHistory swaps a session's history, after compaction.
	ReplaceHistory(ctx context.Context, key Key, history []llm.Message) error
	// SetCommit records the commit a session last answered from.
	SetCommit(ctx context.Context, key Key, commit string) error
	// Unfinished lists turns in state running or interrupted, oldest first.
	Unfinished(ctx context.Context) ([]Turn, error)
	// Turn returns one turn by ID, or ErrNotFound.
	Turn(ctx context.Context, turnID string) (Turn, error)
	// FirstSeen records a dedupe key unless present; it reports whether this
	// call recorded it. Keys expire after ttl.
	FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// AddPart records that part n (from 0) of the turn's answer was posted
	// as the Slack message ts. Parts are recorded in order: n must be the
	// number recorded so far, or that of a part already recorded with the
	// same ts (a repeat is a no-op). Unknown turn: ErrNotFound; ended
	// turn: ErrTurnEnded.
	AddPart(ctx context.Context, turnID string, n int, ts string) error
	Inbox
	// Sessions lists sessions, most recently updated first, without history.
	// A limit of 0 or less lists all.
	Sessions(ctx context.Context, limit int) ([]Session, error)
	// Purge deletes sessions idle since before (Updated before it) with all
	// their turns, and dedupe keys and inbox events expired by the store's now. It returns the
	// number of sessions deleted.
	Purge(ctx context.Context, before time.Time) (int, error)
	// Ping reports whether the store is usable.
	Ping(ctx context.Context) error
	Close() error
}
