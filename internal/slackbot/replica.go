package slackbot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// Shared is what several replicas of the bot coordinate through: the thread
// leases and per-thread queues of a store they all use, the Stop clicks
// Slack delivered to a replica not running the turn, and the work queued
// on threads no turn of which is stored yet (session.Postgres;
// session.Memory shares them between bots of one process, in tests).
type Shared interface {
	session.Leases
	session.Queue
	session.Stops
	session.Activity
}

var _ Shared = session.Backend(nil)

// DefaultLeaseTTL is how long a thread stays with a replica that stopped
// renewing its lease (it died, or lost the database) before another replica
// takes the thread over and resumes its turn. Renewals go every third of it.
const DefaultLeaseTTL = 30 * time.Second

// DefaultReplicaID names this process in the leases it holds: unique per
// process start (a restarted process must not inherit the leases of the
// one before it, which may still be running on a slow host), and readable
// in the database.
func DefaultReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), newID(4))
}

// replicas runs the bot's threads through a Shared store, so that replicas
// answering one Slack app answer each question once, one turn at a time
// per thread, in order (session.Leases describes the protocol):
//
//   - every admitted message is enqueued in its thread's queue in the
//     store; the replica that holds (or takes) the thread's lease drains
//     the queue, one turn at a time, renewing the lease while it works;
//   - each message's turn has an ID derived from the message, so a message
//     whose turn exists already (answered, or cut off and resumed through
//     a claim) is dropped from the queue, not answered again;
//   - at start and every half lease (at most maxClaimInterval),
//     ClaimUnfinished hands this replica the threads whose holder stopped
//     renewing or let them go at shutdown: it resumes their cut-off turn
//     (ContinueTurn fences off a holder that was only slow) and drains
//     what is left queued;
//   - at shutdown it lets its threads go at once; what is queued stays in
//     the store for the next holder, never asked again.
//
// The in-process limit (Config.MaxConcurrent) and visible queueing still
// apply: a drained message waits for one of the dispatcher's slots.
//
// It is safe for concurrent use: the intake goroutine, the claim loop and
// one drain goroutine per thread held here share it.
type replicas struct {
	b     *Bot
	store Shared
	owner string
	ttl   time.Duration

	mu       sync.Mutex
	drainers map[session.Key]*drainer // threads this replica drains now
}

// drainer is one thread whose lease this replica holds. Its fields under
// "guarded by replicas.mu" tell it about work that arrived while it was
// busy, so it cannot let the thread go with that work unseen.
type drainer struct {
	key session.Key
	// first is the ID of the message whose enqueue started the drainer
	// ("" for a claim): the one message known not to carry an hourglass.
	first string

	// Guarded by replicas.mu.
	poked     bool                     // this replica enqueued on the thread since the last NextPending
	recovered []*job                   // claimed cut-off turns, to run before the queue
	signs     map[string]chan struct{} // hourglasses added here, by message ID; closed once on

	lost atomic.Bool  // the lease went to another replica
	turn atomic.Value // string: ID of the turn running now, for cancelling it when the lease is lost
}

// queuedMessage is a message as it waits in the store's queue.
type queuedMessage struct {
	In      inbound   `json:"in"`
	Arrived time.Time `json:"arrived"`
}

func newReplicas(b *Bot, store Shared, owner string, ttl time.Duration) *replicas {
	return &replicas{b: b, store: store, owner: owner, ttl: ttl, drainers: make(map[session.Key]*drainer)}
}

// messageID is a message's identity in its thread's queue: a message
// enqueued twice (by two replicas, before either's dedupe) waits once.
func messageID(in inbound) string { return in.Key.Channel + "/" + in.TS }

// messageTurnID derives a message's turn ID from the message, so that of
// two replicas that both get to start it (one lost its lease while it
// waited) the store lets one: the other's StartTurn gets ErrTurnExists.
func messageTurnID(in inbound) string {
	sum := sha256.Sum256([]byte(in.Key.Team + "/" + in.Key.Channel + "/" + in.TS))
	return hex.EncodeToString(sum[:8])
}

// enqueue puts an admitted message in its thread's queue in the store and
// starts draining the thread if that took its lease. A message that will
// wait (the thread is busy here or on another replica) gets the hourglass.
// Once it returns the message is in the queue, or the thread was told to
// ask again: either way it is handed on.
func (r *replicas) enqueue(ctx context.Context, in inbound) {
	data, err := json.Marshal(queuedMessage{In: in, Arrived: time.Now()})
	if err != nil {
		r.b.log.Error("encode a message for the thread queue", "thread", in.Key.String(), "err", err)
		return
	}
	id := messageID(in)
	acquired, err := r.store.Enqueue(ctx, in.Key, id, data, r.owner, r.ttl)
	if err != nil {
		ref := newID(3)
		r.b.log.Error("enqueue a question in the shared store; not answered", "ref", ref, "thread", in.Key.String(), "err", err)
		r.b.background(func(ctx context.Context) {
			if _, err := r.b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, render.ErrorMessage("I could not take this question in right now; please ask again in a minute.", ref)); err != nil {
				r.b.log.Error("post a note", "thread", in.Key.String(), "err", err)
			}
		})
		return
	}
	sign := make(chan struct{})
	r.mu.Lock()
	d := r.drainers[in.Key]
	switch {
	case acquired && d == nil:
		r.startLocked(&drainer{key: in.Key, first: id})
		sign = nil
	case acquired:
		// The lease is ours and a drainer here is busy with the thread,
		// or just found its queue empty: poked, it looks again.
		d.poked = true
		if d.signs == nil {
			d.signs = make(map[string]chan struct{})
		}
		d.signs[id] = sign
	default:
		// Another replica holds the thread; it finds the message in the
		// queue before it lets the thread go.
		r.b.log.Debug("question queued behind another replica's turn", "thread", in.Key.String(), "ts", in.TS)
	}
	r.mu.Unlock()
	if sign != nil {
		r.b.markQueued(&job{in: in, queuedSign: sign})
	}
}

// startLocked registers d and starts its goroutine; the caller holds r.mu.
// The dispatcher's wait group covers it, so a drain waits for it.
func (r *replicas) startLocked(d *drainer) {
	r.drainers[d.key] = d
	r.b.queue.wg.Add(1)
	go r.drain(d)
}

// known reports whether this replica drains the thread now.
func (r *replicas) known(key session.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.drainers[key]
	return ok
}

// maxClaimInterval bounds the time between two looks for threads to
// claim: a replica that stops (a rolling deploy) releases its leases at
// once, and its threads should not wait half a long TTL for the next look.
// A look is one statement.
const maxClaimInterval = 5 * time.Second

// start claims the threads left by replicas that are gone (or by this
// data's previous run) before the first event is read, so their cut-off
// turns go first in their threads, then keeps claiming every half lease
// (at most every maxClaimInterval).
func (r *replicas) start(ctx context.Context) {
	r.b.log.Info("sharing threads with other replicas", "replica", r.owner, "lease_ttl", r.ttl)
	r.claim(ctx)
	r.b.queue.wg.Go(func() {
		t := time.NewTicker(min(r.ttl/2, maxClaimInterval))
		defer t.Stop()
		for {
			select {
			case <-r.b.queue.closing:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), r.ttl)
			r.claim(ctx)
			cancel()
		}
	})
}

// claim takes over the threads whose holder stopped renewing, queues their
// cut-off turns to be recovered as Config.Recovery says (the newest of a
// thread; older ones are only reported, the history has moved past them),
// and drains their queues.
//
// Then it claims the events a replica received and acked but died before
// queuing (see Bot.claimReceived): they go through the intake.
func (r *replicas) claim(ctx context.Context) {
	defer r.b.claimReceived(ctx)
	claims, err := r.store.ClaimUnfinished(ctx, r.owner, r.ttl)
	if err != nil {
		r.b.log.Error("claim threads left by other replicas; trying again later", "err", err)
		return
	}
	for _, c := range claims {
		var jobs []*job
		for i, t := range c.Turns { // oldest first
			mode := r.b.cfg.Recovery
			if i < len(c.Turns)-1 {
				mode = RecoverReport
			}
			in := inbound{Key: t.Key, User: t.User, TS: t.MsgTS, Text: t.Question}
			jobs = append(jobs, &job{in: in, arrived: time.Now(), turnID: newID(8), recovered: &recovery{turn: t, mode: mode}})
		}
		r.b.log.Info("claimed a thread from a replica that stopped renewing its lease", "thread", c.Key.String(), "cut_off_turns", len(c.Turns), "mode", r.b.cfg.Recovery)
		r.mu.Lock()
		d := r.drainers[c.Key]
		if d == nil {
			d = &drainer{key: c.Key}
			r.startLocked(d)
		}
		d.recovered = append(d.recovered, jobs...)
		d.poked = true
		r.mu.Unlock()
	}
}

// stopPollInterval is how often a running turn looks in the store for a
// Stop click that Slack delivered to another replica: about as long as a
// click takes to show. Each look is one primary-key read.
const stopPollInterval = time.Second

// watchStops stops turnID, as the button does on the replica running it,
// once another replica recorded a click on it (see onInteraction), until
// the returned func is called.
func (r *replicas) watchStops(turnID string) (stop func()) {
	return r.poll(stopPollInterval, func(ctx context.Context) bool {
		user, err := r.store.StopRequested(ctx, turnID)
		if err != nil {
			if ctx.Err() == nil {
				r.b.log.Warn("look for a Stop click from another replica; trying again", "turn", turnID, "err", err)
			}
			return false
		}
		if user == "" {
			return false
		}
		r.b.mu.Lock()
		rt := r.b.running[turnID]
		r.b.mu.Unlock()
		if rt != nil {
			r.b.log.Info("stop clicked on another replica", "turn", turnID, "user", user)
			rt.stop(user)
		}
		return true
	})
}

// requestStop passes a Stop click for a turn not running here to the
// replica running it, through the store. It runs off the read loop.
func (r *replicas) requestStop(turnID, user, channel string) {
	r.b.background(func(ctx context.Context) {
		// As for a turn running here: a click from another channel's
		// message is not for this turn, whatever value it carries.
		if t, err := r.b.cfg.Store.Turn(ctx, turnID); err == nil && t.Key.Channel != channel {
			r.b.log.Warn("stop click refused: it came from another channel than the turn's", "turn", turnID, "user", user, "channel", channel)
			return
		}
		ok, err := r.store.RequestStop(ctx, turnID, user)
		switch {
		case err != nil:
			r.b.log.Error("pass a Stop click to the replica running the turn; it goes on", "turn", turnID, "user", user, "err", err)
		case ok:
			r.b.log.Info("stop clicked for a turn running on another replica; passed on", "turn", turnID, "user", user)
		default:
			r.b.log.Debug("stop clicked for a turn that is not running", "turn", turnID, "user", user)
		}
	})
}

// enqueue hands an admitted question to the thread's queue: the store's,
// shared with the other replicas (which hands its inbox record on), or
// this process's dispatcher (where the turn hands it on when it starts;
// see runTurn). Its turn ID is derived from the message either way, so a
// message handed on twice (a crash in between) is answered once.
func (b *Bot) enqueue(ctx context.Context, in inbound, key string) {
	if b.rep != nil {
		b.rep.enqueue(ctx, in)
		b.handled(key)
		return
	}
	b.queue.enqueue(&job{in: in, arrived: time.Now(), turnID: messageTurnID(in), intake: key})
}
