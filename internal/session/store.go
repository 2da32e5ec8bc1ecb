// Package session maps a Slack thread to an agent session: its history, its
// turns, and the persistence behind them. Store is the contract every backend
// (in-memory, SQLite, a shared network database) implements; it speaks plain
// Go types, no SQL dialect leaks through it.
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
)

// Turn is one question and the work that answers it.
type Turn struct {
	ID       string
	Key      Key
	State    TurnState
	User     string // Slack user who asked
	Question string // the question as asked (mention stripped)
	MsgTS    string // ts of the message that asked, for replies and dedupe
	Started  time.Time
	Ended    time.Time
	Steps    int
	Usage    llm.Usage
	ErrRef   string // short reference shown to people and logged with the error
}

// ErrNotFound is returned for a turn or session that does not exist.
var ErrNotFound = errors.New("not found")

// Store persists sessions, turns and event dedupe keys. Implementations are
// safe for concurrent use. Each method is atomic: a turn's writes that must
// go together are one call.
type Store interface {
	// Session returns the thread's session; ok is false if there is none.
	Session(ctx context.Context, key Key) (s Session, ok bool, err error)
	// StartTurn records t as running, creating the session (with repo) if
	// needed, and appends userMsg to the history.
	StartTurn(ctx context.Context, t Turn, repo string, userMsg llm.Message) error
	// AppendStep appends one completed step's messages to the turn's session
	// history and adds usage to the turn and the session totals.
	AppendStep(ctx context.Context, turnID string, msgs []llm.Message, usage llm.Usage) error
	// EndTurn sets the turn's final state; a done turn counts in Session.Turns.
	EndTurn(ctx context.Context, turnID string, state TurnState, errRef string) error
	// SetTurnState changes the state of a turn without ending it (for
	// instance interrupted → running when it is resumed).
	SetTurnState(ctx context.Context, turnID string, state TurnState) error
	// ReplaceHistory swaps a session's history, after compaction.
	ReplaceHistory(ctx context.Context, key Key, history []llm.Message) error
	// SetCommit records the commit a session last answered from.
	SetCommit(ctx context.Context, key Key, commit string) error
	// Unfinished lists turns in state running or interrupted, oldest first.
	Unfinished(ctx context.Context) ([]Turn, error)
	// FirstSeen records a dedupe key unless present; it reports whether this
	// call recorded it. Keys expire after ttl.
	FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// Sessions lists sessions, most recently updated first, without history.
	Sessions(ctx context.Context, limit int) ([]Session, error)
	// Purge deletes sessions idle since before and expired dedupe keys.
	Purge(ctx context.Context, before time.Time) (int, error)
	// Ping reports whether the store is usable.
	Ping(ctx context.Context) error
	Close() error
}
