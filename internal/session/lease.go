package session

import (
	"context"
	"errors"
	"time"
)

// Leases keep one turn at a time per thread across every replica sharing a
// store. Every store implements them: for one process they cost a map entry
// or a row, for a shared database they are what keeps two replicas from
// answering one thread twice.
//
// A lease names its owner (a replica ID, unique per process start) and
// expires at a time from the store's clock. The owner row is the truth: the
// owner may renew or release its lease even after it expired, as long as no
// one else took it; anyone else may take it only once it expired. So a
// replica that dies mid-turn blocks its threads for at most one ttl, after
// which ClaimUnfinished hands them to a live replica.
//
// How the service uses them, per thread:
//
//  1. A message arrives (on any replica): Enqueue it. If that took the
//     lease, this replica drains the thread; if not, the holder will find
//     the message before it lets the thread go.
//  2. The holder loops on NextPending, passing the Seq of the message it
//     last finished: it starts that message's turn (turn IDs derived from
//     the message, so a repeat gives ErrTurnExists), runs it while
//     RenewThread-ing every ttl/3, and asks for the next. When the queue is
//     empty NextPending releases the lease in the same step.
//  3. Periodically (and at start) every replica calls ClaimUnfinished: the
//     threads of dead replicas come back with their unfinished turns, which
//     the claimer resumes with ContinueTurn (the claim that fences off the
//     dead owner's writes) before it drains their queues as in 2.
//
// If RenewThread reports false the lease was lost: the replica stops the
// turn's run and posts nothing more; the new holder resumes the turn.
type Leases interface {
	// AcquireThread takes key's lease for owner until now+ttl if it is
	// free, expired, or already owner's (then it is extended); it reports
	// whether owner holds it.
	AcquireThread(ctx context.Context, key Key, owner string, ttl time.Duration) (bool, error)
	// RenewThread extends owner's lease on key to now+ttl. It reports false,
	// changing nothing, if the lease is not owner's any more (it expired
	// and another owner took it, or was released).
	RenewThread(ctx context.Context, key Key, owner string, ttl time.Duration) (bool, error)
	// ReleaseThread frees key's lease if owner holds it; it is a no-op
	// otherwise, so a replica that lost a lease cannot free another's.
	ReleaseThread(ctx context.Context, key Key, owner string) error
	// ClaimUnfinished takes for owner, until now+ttl, the lease of every
	// thread that has work left (an unfinished turn or a pending message)
	// and whose lease is free or expired, and returns those threads,
	// oldest unfinished turn first. A thread whose lease owner already
	// holds unexpired is not claimed: it is being worked on. Of replicas
	// claiming at once, each thread goes to exactly one.
	ClaimUnfinished(ctx context.Context, owner string, ttl time.Duration) ([]Claim, error)
}

// Claim is a thread taken over by ClaimUnfinished.
type Claim struct {
	Key Key
	// Turns are the thread's unfinished turns (running or interrupted),
	// oldest first; empty when only queued messages were left.
	Turns []Turn
}

// Pending is a message waiting in its thread's queue.
type Pending struct {
	// Seq orders the messages of a thread as they were enqueued; pass it
	// back to NextPending once the message is handled.
	Seq      int64
	Key      Key
	ID       string // the message's identity (channel/ts): enqueuing it again is a no-op while it waits
	Data     []byte // the message as the service encoded it; the store does not read it
	Enqueued time.Time
}

// Queue keeps the messages of a thread in arrival order across replicas: a
// follow-up that lands on a replica not holding the thread's lease waits in
// the store until the holder gets to it, instead of being answered out of
// turn or lost with the replica that received it.
//
// The store makes "enqueue, then try the lease" and "find the queue empty,
// then release" mutually atomic per thread, so no message is left waiting
// with no holder to drain it.
type Queue interface {
	// Enqueue appends a message to key's queue (a message with the same id
	// already waiting is not added twice), then takes key's lease for owner
	// as AcquireThread does; acquired says whether owner holds it now and
	// must drain the queue with NextPending.
	Enqueue(ctx context.Context, key Key, id string, data []byte, owner string, ttl time.Duration) (acquired bool, err error)
	// NextPending removes key's messages up to and including done (the Seq
	// of the message the holder finished; 0 for none) and returns the
	// oldest one left, which stays queued until a later call passes its
	// Seq: a holder that dies while handling it leaves it for the next.
	// When none is left it releases the lease and returns ok false. It
	// fails with ErrLeaseLost unless owner holds key's lease.
	NextPending(ctx context.Context, key Key, owner string, done int64) (p Pending, ok bool, err error)
}

// ErrLeaseLost is returned by NextPending to a replica whose lease was taken
// by another after it expired: the other replica now drains the thread.
var ErrLeaseLost = errors.New("thread lease lost to another replica")

// Stops carry a click on an answer's Stop button from the replica Slack
// delivered it to (any of them) to the replica running the turn, which
// looks for a request while the turn runs and cancels it as if the click
// had landed there. The request is kept with the turn, so it goes when the
// turn's session is purged.
type Stops interface {
	// RequestStop records that user asked to stop turn turnID. It reports
	// false, recording nothing, unless the turn is running: a click on an
	// answer that ended, or was cut off and handed on under another turn
	// ID, does nothing. Of several requests the first user is kept.
	RequestStop(ctx context.Context, turnID, user string) (bool, error)
	// StopRequested returns the user who asked to stop turnID, or "" if no
	// one did or the turn is unknown. It is one primary-key read: the
	// running replica asks about every second.
	StopRequested(ctx context.Context, turnID string) (string, error)
}

// Activity shows a replica the work another replica has on a thread before
// any turn of it is stored: a question waiting in the thread's queue (for
// a dispatcher slot, for its checkout) or a lease someone holds.
type Activity interface {
	// ThreadBusy reports whether key has a message in its queue or a
	// lease that has not expired.
	ThreadBusy(ctx context.Context, key Key) (bool, error)
}

// Backend is what Open returns: a Store whose threads can be shared by
// several replicas. Memory, SQLite and Postgres all implement it.
type Backend interface {
	Store
	Leases
	Queue
	Stops
	Activity
	UsageTotals
}
