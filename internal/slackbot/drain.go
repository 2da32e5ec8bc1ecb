package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/session"
)

// drain answers the thread's queue while this replica holds its lease:
// claimed turns first, then each queued message in order. It lets the
// thread go when the queue is empty (NextPending releases the lease in the
// same step), when the lease is lost, or at shutdown (then what is left
// stays queued in the store for another replica or the next start).
func (r *replicas) drain(d *drainer) {
	defer r.b.queue.wg.Done()
	// Store calls outlive Run's context: a drain still records and lets go.
	ctx := context.WithoutCancel(r.b.turnCtx)
	log := r.b.log.With("thread", d.key.String(), "replica", r.owner)
	var done int64 // Seq of the last message handled
	for {
		r.mu.Lock()
		jobs := d.recovered
		d.recovered, d.poked = nil, false
		r.mu.Unlock()
		for _, j := range jobs {
			if !r.run(d, j) {
				r.letGo(ctx, d, done, log)
				return
			}
		}
		if r.closing() || d.lost.Load() {
			r.letGo(ctx, d, done, log)
			return
		}

		p, ok, err := r.store.NextPending(ctx, d.key, r.owner, done)
		switch {
		case errors.Is(err, session.ErrLeaseLost):
			log.Warn("thread lease lost to another replica; it answers the rest")
			d.lost.Store(true)
			r.letGo(ctx, d, done, log)
			return
		case err != nil:
			log.Error("read the thread's queue; trying again", "err", err)
			if !r.pause() {
				r.letGo(ctx, d, done, log)
				return
			}
			continue
		case !ok:
			// The store released the lease. An enqueue or a claim here
			// since the call took it again: look again.
			r.mu.Lock()
			if d.poked || len(d.recovered) > 0 {
				r.mu.Unlock()
				continue
			}
			delete(r.drainers, d.key)
			r.mu.Unlock()
			return
		}

		handled, keepOn := r.handle(ctx, d, p, log)
		if handled {
			done = p.Seq
		}
		if !keepOn {
			r.letGo(ctx, d, done, log)
			return
		}
	}
}

// handle answers one queued message, or finds that it needs no answer.
// handled: the message leaves the queue with the next NextPending; keepOn
// false: shutdown or a lost lease stopped it, and the drain lets the
// thread go.
func (r *replicas) handle(ctx context.Context, d *drainer, p session.Pending, log *slog.Logger) (handled, keepOn bool) {
	var m queuedMessage
	if err := json.Unmarshal(p.Data, &m); err != nil {
		log.Error("a queued message does not decode; dropped", "id", p.ID, "err", err)
		return true, true
	}
	j := &job{in: m.In, arrived: m.Arrived, turnID: messageTurnID(m.In)}
	if t, err := r.b.cfg.Store.Turn(ctx, j.turnID); err == nil {
		if !t.State.Ended() {
			// Cut off on a replica that died, and this replica took
			// the thread by enqueuing (not by a claim): finish it now,
			// in its place in the thread.
			log.Info("resuming a queued message's cut-off turn", "turn", t.ID)
			if !r.run(d, &job{in: j.in, arrived: j.arrived, turnID: newID(8), queuedSign: closedSign, recovered: &recovery{turn: t, mode: r.b.cfg.Recovery}}) {
				return false, false
			}
		} else {
			// Answered (or failed, or handed to a claimed turn).
			log.Debug("queued message already has its turn; dropped", "id", p.ID, "turn", j.turnID)
		}
		return true, true
	} else if !errors.Is(err, session.ErrNotFound) {
		log.Error("look up a queued message's turn; trying again", "id", p.ID, "err", err)
		return false, r.pause()
	}
	r.mu.Lock()
	sign, marked := d.signs[p.ID]
	delete(d.signs, p.ID)
	r.mu.Unlock()
	switch {
	case marked:
		j.queuedSign = sign
	case p.ID != d.first:
		// Queued on another replica (which put the hourglass on it)
		// or left by a dead one.
		j.queuedSign = closedSign
	}
	if !r.run(d, j) {
		return false, false
	}
	return true, true
}

// closedSign stands for an hourglass put on by another replica: there is
// nothing to wait for before taking it off.
var closedSign = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// run runs one job in a dispatcher slot, renewing the thread's lease from
// the wait for the slot to the end of the turn. It reports false if the
// job did not run: shutdown came first, or the lease was lost meanwhile.
func (r *replicas) run(d *drainer, j *job) bool {
	q := r.b.queue
	stop := r.keepLease(d)
	defer stop()
	if j.queuedSign == nil && len(q.slots) == cap(q.slots) {
		j.queuedSign = make(chan struct{})
		r.b.markQueued(j)
	}
	q.m.queueDepth.Inc()
	ok := q.acquire()
	q.m.queueDepth.Dec()
	if !ok {
		return false
	}
	defer func() { <-q.slots }()
	if d.lost.Load() {
		return false
	}
	d.turn.Store(j.turnID)
	defer d.turn.Store("")
	defer r.watchStops(j.turnID)()
	j.holdsLease = func(ctx context.Context) bool { return r.holds(ctx, d) }
	q.running.Add(1)
	defer q.running.Add(-1)
	r.b.runTurn(j)
	return true
}

// holds renews d's lease and reports whether this replica still has it. A
// turn asks right before posting its answer: if its lease lapsed during
// the last step (the step stored, the answer not yet posted), another
// replica may have claimed the turn, found it ending in an answer and
// posted that, and a second copy must not follow. The renewal keeps the
// lease for a full TTL, far longer than the post takes. If the store
// cannot tell, the answer is posted: a rare double beats a lost answer.
func (r *replicas) holds(ctx context.Context, d *drainer) bool {
	if d.lost.Load() {
		return false
	}
	ok, err := r.store.RenewThread(ctx, d.key, r.owner, r.ttl)
	if err != nil {
		r.b.log.Warn("check the thread lease before posting an answer; posting", "thread", d.key.String(), "err", err)
		return true
	}
	if !ok {
		d.lost.Store(true)
	}
	return ok
}

// keepLease renews d's lease every third of the TTL until the returned
// func is called. If the lease was taken by another replica (this one
// could not renew in time), the running turn is cut and posts nothing
// more: the new holder resumes it.
func (r *replicas) keepLease(d *drainer) (stop func()) {
	return r.poll(r.ttl/3, func(ctx context.Context) bool {
		ok, err := r.store.RenewThread(ctx, d.key, r.owner, r.ttl)
		if err != nil {
			if ctx.Err() == nil {
				r.b.log.Warn("renew a thread lease; trying again", "thread", d.key.String(), "err", err)
			}
			return false
		}
		if !ok {
			d.lost.Store(true)
			id, _ := d.turn.Load().(string)
			r.b.log.Warn("thread lease taken by another replica; cutting the turn", "thread", d.key.String(), "turn", id)
			r.b.mu.Lock()
			rt := r.b.running[id]
			r.b.mu.Unlock()
			if rt != nil {
				rt.cancel(errTakenOver)
			}
		}
		return !ok
	})
}

// poll calls check every interval, until check reports that it is done or
// the returned func is called; that func waits for a check in progress.
// check's context ends with the returned func only, not with the bot's
// turn context: whoever started the poll decides when it stops.
func (r *replicas) poll(interval time.Duration, check func(ctx context.Context) (done bool)) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.b.turnCtx))
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if check(ctx) {
				return
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// letGo ends this replica's hold on the thread: what it handled leaves the
// queue, and the lease is released so another replica claims what is left
// at once instead of after the TTL.
func (r *replicas) letGo(ctx context.Context, d *drainer, done int64, log *slog.Logger) {
	r.mu.Lock()
	delete(r.drainers, d.key)
	r.mu.Unlock()
	if d.lost.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if done > 0 {
		_, ok, err := r.store.NextPending(ctx, d.key, r.owner, done)
		if err != nil && !errors.Is(err, session.ErrLeaseLost) {
			log.Error("drop a handled message from the thread queue", "err", err)
		}
		if err != nil || !ok {
			return // released with the empty queue, or not ours
		}
	}
	if err := r.store.ReleaseThread(ctx, d.key, r.owner); err != nil {
		log.Error("release a thread lease; another replica takes it when it expires", "err", err)
	}
}

func (r *replicas) closing() bool {
	select {
	case <-r.b.queue.closing:
		return true
	default:
		return false
	}
}

// pause waits a moment before a store call is tried again; false if
// shutdown began.
func (r *replicas) pause() bool {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-r.b.queue.closing:
		return false
	case <-t.C:
		return true
	}
}
