package slackbot

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askrepo/askrepo/internal/session"
)

// job is one question waiting for, or having, its turn.
type job struct {
	in      inbound
	arrived time.Time
	// queuedSign is closed once the "queued" reaction is on the question;
	// nil if the job never waited. The turn waits for it before swapping
	// the reaction, so the swap cannot overtake the add.
	queuedSign chan struct{}
	// recovered is set for a turn a restart cut off, to be finished
	// rather than started.
	recovered *recovery
	// turnID is the ID the turn gets; empty means a random one. Replicas
	// derive it from the message (see messageTurnID).
	turnID string
	// intake is the question's record in the store's inbox, marked
	// handled once the turn is stored (or the question is dropped); ""
	// for none.
	intake string
	// holdsLease, set by replicas, reports whether this process still
	// holds the thread's lease, renewing it; nil without replicas.
	holdsLease func(context.Context) bool
}

// dispatcher runs each thread's jobs one at a time in arrival order, and at
// most cap(slots) jobs at once over all threads. A thread has a worker
// goroutine only while it has jobs; the map entry is its presence. It is
// safe for concurrent use.
type dispatcher struct {
	slots   chan struct{}
	m       *metrics
	run     func(*job) // runs a turn; set before the first enqueue
	reject  func(*job) // a job that will not run: shutdown came first
	queued  func(*job) // marks a job visibly queued; must not block
	closing chan struct{}

	mu      sync.Mutex
	closed  bool
	threads map[session.Key][]*job
	wg      sync.WaitGroup
	running atomic.Int64
}

func newDispatcher(max int, m *metrics) *dispatcher {
	return &dispatcher{
		slots:   make(chan struct{}, max),
		m:       m,
		closing: make(chan struct{}),
		threads: make(map[session.Key][]*job),
	}
}

// enqueue adds j behind its thread's earlier jobs.
func (d *dispatcher) enqueue(j *job) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.reject(j)
		return
	}
	q, active := d.threads[j.in.Key]
	d.threads[j.in.Key] = append(q, j)
	// The thread is busy, or every slot is taken: the job will wait, and
	// people should see that it was received.
	waits := active || len(d.slots) == cap(d.slots)
	if waits {
		j.queuedSign = make(chan struct{})
	}
	d.m.queueDepth.Inc()
	if !active {
		d.wg.Add(1)
		go d.work(j.in.Key)
	}
	d.mu.Unlock()
	if waits {
		d.queued(j)
	}
}

func (d *dispatcher) work(key session.Key) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		q := d.threads[key]
		if len(q) == 0 {
			delete(d.threads, key)
			d.mu.Unlock()
			return
		}
		j := q[0]
		q[0] = nil
		d.threads[key] = q[1:] // the entry stays while j runs: the thread is busy
		d.mu.Unlock()

		if !d.acquire() {
			d.m.queueDepth.Dec()
			d.reject(j)
			continue
		}
		d.m.queueDepth.Dec()
		d.running.Add(1)
		d.run(j)
		d.running.Add(-1)
		<-d.slots
	}
}

// acquire takes a slot, or reports false once the dispatcher is closed:
// after shutdown starts, no new turn begins.
func (d *dispatcher) acquire() bool {
	select {
	case <-d.closing:
		return false
	default:
	}
	select {
	case d.slots <- struct{}{}:
	case <-d.closing:
		return false
	}
	select {
	case <-d.closing:
		<-d.slots
		return false
	default:
		return true
	}
}

// known reports whether the thread has a job queued or running.
func (d *dispatcher) known(key session.Key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.threads[key]
	return ok
}

func (d *dispatcher) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		close(d.closing)
	}
}

func (d *dispatcher) wait()             { d.wg.Wait() }
func (d *dispatcher) runningCount() int { return int(d.running.Load()) }
