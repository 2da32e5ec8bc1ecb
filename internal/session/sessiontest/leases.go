package sessiontest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/session"
)

// leaseCase is a case of the lease and queue contract. peer is a second
// handle on the same data when the suite is Shared (the other replica),
// else the same store.
type leaseCase struct {
	name string
	run  func(t *testing.T, x *h, peer session.Backend)
}

func runLeaseTests(t *testing.T, s Suite) {
	cases := []leaseCase{
		{"lease is exclusive between owners", testLeaseExclusive},
		{"lease expires on the store's clock", testLeaseExpiry},
		{"racing acquirers: exactly one wins", testLeaseRace},
		{"claim unfinished takes dead owners' threads only", testClaimUnfinished},
		{"racing claimers take each thread once", testClaimRace},
		{"queue keeps order and releases the lease when empty", testQueueOrder},
		{"enqueue racing the holder's release strands nothing", testQueueHandoff},
		{"claim picks up a dead holder's queue", testClaimQueue},
		{"a stop requested on one replica is seen on the other", testStopRequest},
		{"a thread is busy while it has queued messages or a live lease", testThreadBusy},
		{"an event is received once, by any replica, until its key expires", testReceiveOnce},
		{"claim received takes events whose hold passed, oldest first", testClaimReceived},
		{"racing claimers take each received event once", testClaimReceivedRace},
		{"answer parts are recorded in order and follow a continued turn", testAddPart},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := &h{t: t, clock: NewClock(base), dir: t.TempDir(), open: s.Open}
			x.st = s.Open(t, x.dir, x.clock.Now)
			t.Cleanup(func() { x.st.Close() })
			peer := backend(t, x.st)
			if s.Shared {
				p := s.Open(t, x.dir, x.clock.Now)
				t.Cleanup(func() { p.Close() })
				peer = backend(t, p)
			}
			tc.run(t, x, peer)
		})
	}
}

func backend(t *testing.T, st session.Store) session.Backend {
	t.Helper()
	b, ok := st.(session.Backend)
	if !ok {
		t.Fatalf("%T does not implement session.Leases and session.Queue; every store must", st)
	}
	return b
}

const ttl = 30 * time.Second

func acquire(t *testing.T, b session.Backend, key session.Key, owner string, want bool) {
	t.Helper()
	got, err := b.AcquireThread(t.Context(), key, owner, ttl)
	if err != nil || got != want {
		t.Errorf("AcquireThread(%s, %s) = %v, %v; want %v", key, owner, got, err, want)
	}
}

func renew(t *testing.T, b session.Backend, key session.Key, owner string, want bool) {
	t.Helper()
	got, err := b.RenewThread(t.Context(), key, owner, ttl)
	if err != nil || got != want {
		t.Errorf("RenewThread(%s, %s) = %v, %v; want %v", key, owner, got, err, want)
	}
}

func release(t *testing.T, b session.Backend, key session.Key, owner string) {
	t.Helper()
	if err := b.ReleaseThread(t.Context(), key, owner); err != nil {
		t.Errorf("ReleaseThread(%s, %s): %v", key, owner, err)
	}
}

func testLeaseExclusive(t *testing.T, x *h, peer session.Backend) {
	a := backend(t, x.st)
	acquire(t, a, keyA, "r1", true)
	acquire(t, peer, keyA, "r2", false)
	acquire(t, peer, keyB, "r2", true) // other threads are independent
	acquire(t, a, keyA, "r1", true)    // the holder may take it again
	renew(t, peer, keyA, "r2", false)
	renew(t, a, keyA, "r1", true)
	release(t, peer, keyA, "r2") // not r2's: changes nothing
	acquire(t, peer, keyA, "r2", false)
	release(t, a, keyA, "r1")
	acquire(t, peer, keyA, "r2", true)
	renew(t, a, keyA, "r1", false)
}

func testLeaseExpiry(t *testing.T, x *h, peer session.Backend) {
	a := backend(t, x.st)
	acquire(t, a, keyA, "r1", true)
	x.clock.Advance(ttl - time.Second)
	acquire(t, peer, keyA, "r2", false)
	// A renewal moves the expiry from the renewal's time.
	renew(t, a, keyA, "r1", true)
	x.clock.Advance(ttl - time.Second)
	acquire(t, peer, keyA, "r2", false)
	x.clock.Advance(time.Second)
	acquire(t, peer, keyA, "r2", true) // expired: taken over
	renew(t, a, keyA, "r1", false)     // the old holder learns it lost
	release(t, a, keyA, "r1")
	acquire(t, a, keyA, "r1", false)

	// Expired but taken by no one: the holder still owns it.
	acquire(t, a, keyB, "r1", true)
	x.clock.Advance(2 * ttl)
	renew(t, a, keyB, "r1", true)
	acquire(t, peer, keyB, "r2", false)
}

func testLeaseRace(t *testing.T, x *h, peer session.Backend) {
	const n = 20
	stores := []session.Backend{backend(t, x.st), peer}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		mu    sync.Mutex
		won   []string
	)
	for i := range n {
		wg.Go(func() {
			<-start
			owner := fmt.Sprintf("r%d", i)
			ok, err := stores[i%2].AcquireThread(t.Context(), keyA, owner, ttl)
			if err != nil {
				t.Errorf("AcquireThread(%s): %v", owner, err)
			}
			if ok {
				mu.Lock()
				won = append(won, owner)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d of %d racing owners took the lease (%v); want exactly 1", len(won), n, won)
	}
	for i := range n {
		if owner := fmt.Sprintf("r%d", i); owner != won[0] {
			renew(t, stores[i%2], keyA, owner, false)
		}
	}
	renew(t, peer, keyA, won[0], true)
}

func claimKeys(cs []session.Claim) []session.Key {
	var out []session.Key
	for _, c := range cs {
		out = append(out, c.Key)
	}
	return out
}

func turnIDs(ts []session.Turn) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func testClaimUnfinished(t *testing.T, x *h, peer session.Backend) {
	ctx := t.Context()
	a := backend(t, x.st)
	// keyA: two unfinished turns of a replica that will die.
	acquire(t, a, keyA, "dead", true)
	mustStart(t, x.st, "a1", keyA, "q1")
	if err := x.st.SetTurnState(ctx, "a1", session.TurnInterrupted); err != nil {
		t.Fatal(err)
	}
	x.clock.Advance(time.Second)
	mustStart(t, x.st, "a2", keyA, "q2")
	// keyB: a live replica's turn, renewed as it runs.
	x.clock.Advance(time.Second)
	acquire(t, peer, keyB, "live", true)
	mustStart(t, x.st, "b1", keyB, "q")
	// A finished thread has nothing to claim.
	mustStart(t, x.st, "done", keyC, "q")
	mustEnd(t, x.st, "done", session.TurnDone)

	got, err := peer.ClaimUnfinished(ctx, "r1", ttl)
	if err != nil || len(got) != 0 {
		t.Fatalf("ClaimUnfinished while every lease is live = %v, %v; want none", claimKeys(got), err)
	}
	x.clock.Advance(ttl)
	renew(t, peer, keyB, "live", true)
	got, err = peer.ClaimUnfinished(ctx, "r1", ttl)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "claimed threads", []session.Key{keyA}, claimKeys(got))
	if len(got) == 1 {
		diff(t, "claimed turns, oldest first", []string{"a1", "a2"}, turnIDs(got[0].Turns))
		if got[0].Turns[0].State != session.TurnInterrupted || got[0].Turns[0].Question != "q1" {
			t.Errorf("claimed turn = %+v; want the stored turn a1", got[0].Turns[0])
		}
	}
	renew(t, a, keyA, "dead", false)
	acquire(t, a, keyA, "r2", false)
	for _, owner := range []string{"r1", "r2"} {
		if again, err := a.ClaimUnfinished(ctx, owner, ttl); err != nil || len(again) != 0 {
			t.Errorf("ClaimUnfinished(%s) of held threads = %v, %v; want none (r1 works on them)", owner, claimKeys(again), err)
		}
	}

	// A turn started without a lease (a single process that never took
	// one, or a crash before the first) is claimable at once.
	key := session.Key{Team: "T9", Channel: "C9", Thread: "9.0"}
	mustStart(t, x.st, "free", key, "q")
	got, err = a.ClaimUnfinished(ctx, "r2", ttl)
	if err != nil || len(got) != 1 || got[0].Key != key {
		t.Errorf("ClaimUnfinished of a lease-less turn = %v, %v; want %s", claimKeys(got), err, key)
	}
}

func testClaimRace(t *testing.T, x *h, peer session.Backend) {
	const threads, claimers = 10, 8
	var keys []session.Key
	for i := range threads {
		k := session.Key{Team: "T", Channel: "C", Thread: fmt.Sprintf("1700000000.%06d", i)}
		keys = append(keys, k)
		mustStart(t, x.st, fmt.Sprintf("t%d", i), k, "q")
	}
	stores := []session.Backend{backend(t, x.st), peer}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		mu    sync.Mutex
		got   = map[session.Key][]string{}
	)
	for i := range claimers {
		wg.Go(func() {
			<-start
			owner := fmt.Sprintf("r%d", i)
			cs, err := stores[i%2].ClaimUnfinished(t.Context(), owner, ttl)
			if err != nil {
				t.Errorf("ClaimUnfinished(%s): %v", owner, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, c := range cs {
				got[c.Key] = append(got[c.Key], owner)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, k := range keys {
		if len(got[k]) != 1 {
			t.Errorf("thread %s claimed by %v; want exactly one claimer", k, got[k])
		}
	}
}

func next(t *testing.T, b session.Backend, key session.Key, owner string, done int64) (session.Pending, bool) {
	t.Helper()
	p, ok, err := b.NextPending(t.Context(), key, owner, done)
	if err != nil {
		t.Fatalf("NextPending(%s, %s, %d): %v", key, owner, done, err)
	}
	return p, ok
}

func enqueue(t *testing.T, b session.Backend, key session.Key, id, owner string, want bool) {
	t.Helper()
	got, err := b.Enqueue(t.Context(), key, id, []byte("data of "+id), owner, ttl)
	if err != nil || got != want {
		t.Errorf("Enqueue(%s, %s, %s) = %v, %v; want acquired %v", key, id, owner, got, err, want)
	}
}

func testQueueOrder(t *testing.T, x *h, peer session.Backend) {
	a := backend(t, x.st)
	enqueue(t, a, keyA, "m1", "r1", true)
	x.clock.Advance(time.Second)
	enqueue(t, peer, keyA, "m2", "r2", false)
	enqueue(t, peer, keyA, "m2", "r2", false) // a redelivery waits once
	enqueue(t, peer, keyA, "m3", "r2", false)
	enqueue(t, peer, keyB, "other", "r2", true)

	p1, _ := next(t, a, keyA, "r1", 0)
	diff(t, "first message", session.Pending{Seq: p1.Seq, Key: keyA, ID: "m1", Data: []byte("data of m1"), Enqueued: base}, p1)
	// Until the holder says it is done, the head stays.
	if again, ok := next(t, a, keyA, "r1", 0); !ok || again.ID != "m1" {
		t.Errorf("NextPending before done = %q; want m1 again", again.ID)
	}
	if _, _, err := peer.NextPending(t.Context(), keyA, "r2", 0); !errors.Is(err, session.ErrLeaseLost) {
		t.Errorf("NextPending by a non-holder: err = %v; want ErrLeaseLost", err)
	}
	var ids []string
	done := int64(0)
	for {
		p, ok := next(t, a, keyA, "r1", done)
		if !ok {
			break
		}
		if p.Seq <= done {
			t.Fatalf("Seq %d after %d; want increasing", p.Seq, done)
		}
		ids = append(ids, p.ID)
		done = p.Seq
	}
	diff(t, "messages in order", []string{"m1", "m2", "m3"}, ids)
	// The empty queue released the lease.
	acquire(t, peer, keyA, "r2", true)
	if _, _, err := a.NextPending(t.Context(), keyA, "r1", done); !errors.Is(err, session.ErrLeaseLost) {
		t.Errorf("NextPending after release: err = %v; want ErrLeaseLost", err)
	}
	if p, ok := next(t, peer, keyB, "r2", 0); !ok || p.ID != "other" {
		t.Errorf("other thread's queue = %q, %v; want its own message", p.ID, ok)
	}
}

// testQueueHandoff races a follow-up arriving on one replica with the
// holder finding its queue empty on the other: whichever wins, someone
// holds the lease and will answer the follow-up.
func testQueueHandoff(t *testing.T, x *h, peer session.Backend) {
	a := backend(t, x.st)
	for i := range 30 {
		key := session.Key{Team: "T", Channel: "C", Thread: fmt.Sprintf("%d.0", i)}
		id := fmt.Sprintf("m%d", i)
		acquire(t, a, key, "holder", true)
		var (
			wg       sync.WaitGroup
			start    = make(chan struct{})
			acquired bool
			got      session.Pending
			gotOK    bool
			errs     = make([]error, 2)
		)
		wg.Go(func() {
			<-start
			acquired, errs[0] = peer.Enqueue(t.Context(), key, id, nil, "sender", ttl)
		})
		wg.Go(func() {
			<-start
			got, gotOK, errs[1] = a.NextPending(t.Context(), key, "holder", 0)
		})
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		switch {
		case acquired && gotOK:
			t.Fatalf("round %d: both the sender and the holder hold %s", i, key)
		case acquired:
			if p, ok := next(t, peer, key, "sender", 0); !ok || p.ID != id {
				t.Fatalf("round %d: the sender took the lease but found %q, %v; want %s", i, p.ID, ok, id)
			}
		case gotOK:
			if got.ID != id {
				t.Fatalf("round %d: holder found %q; want %s", i, got.ID, id)
			}
		default:
			t.Fatalf("round %d: %s is queued with no holder to answer it", i, id)
		}
	}
}

func testClaimQueue(t *testing.T, x *h, peer session.Backend) {
	a := backend(t, x.st)
	enqueue(t, a, keyB, "m1", "dead", true)
	enqueue(t, a, keyB, "m2", "dead", true)
	if p, ok := next(t, a, keyB, "dead", 0); !ok || p.ID != "m1" {
		t.Fatalf("NextPending = %q; want m1", p.ID)
	}
	x.clock.Advance(ttl)
	got, err := peer.ClaimUnfinished(t.Context(), "r1", ttl)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "claims", []session.Claim{{Key: keyB}}, got)
	// The dead holder never finished m1: the claimer gets it first.
	var ids []string
	done := int64(0)
	for {
		p, ok := next(t, peer, keyB, "r1", done)
		if !ok {
			break
		}
		ids = append(ids, p.ID)
		done = p.Seq
	}
	diff(t, "messages the claimer drains", []string{"m1", "m2"}, ids)
	if _, _, err := a.NextPending(t.Context(), keyB, "dead", 0); !errors.Is(err, session.ErrLeaseLost) {
		t.Errorf("NextPending by the dead holder: err = %v; want ErrLeaseLost", err)
	}
	if slices.ContainsFunc(got, func(c session.Claim) bool { return len(c.Turns) > 0 }) {
		t.Errorf("claims %v carry turns; the thread had none", got)
	}
}

func requestStop(t *testing.T, b session.Backend, turnID, user string, want bool) {
	t.Helper()
	got, err := b.RequestStop(t.Context(), turnID, user)
	if err != nil || got != want {
		t.Errorf("RequestStop(%s, %s) = %v, %v; want %v", turnID, user, got, err, want)
	}
}

func stopRequested(t *testing.T, b session.Backend, turnID, want string) {
	t.Helper()
	got, err := b.StopRequested(t.Context(), turnID)
	if err != nil || got != want {
		t.Errorf("StopRequested(%s) = %q, %v; want %q", turnID, got, err, want)
	}
}

func testStopRequest(t *testing.T, x *h, peer session.Backend) {
	a := backend(t, x.st)
	mustStart(t, x.st, "t1", keyA, "Q1")
	mustStart(t, x.st, "t2", keyB, "Q2")
	stopRequested(t, a, "t1", "")

	// The click lands on the peer; the replica running t1 sees who it was.
	requestStop(t, peer, "t1", "U7", true)
	stopRequested(t, a, "t1", "U7")
	requestStop(t, peer, "t1", "U8", true) // a second click: still running, first user kept
	stopRequested(t, a, "t1", "U7")
	stopRequested(t, a, "t2", "") // other turns are untouched

	// Ended, unknown, or cut off and continued under another ID: nothing.
	mustEnd(t, x.st, "t2", session.TurnDone)
	requestStop(t, peer, "t2", "U7", false)
	stopRequested(t, a, "t2", "")
	requestStop(t, peer, "nope", "U7", false)
	stopRequested(t, a, "nope", "")
	mustStart(t, x.st, "t3", keyC, "Q3")
	if err := x.st.SetTurnState(t.Context(), "t3", session.TurnInterrupted); err != nil {
		t.Fatal(err)
	}
	requestStop(t, peer, "t3", "U7", false)
	stopRequested(t, a, "t3", "")
}

func busy(t *testing.T, b session.Backend, key session.Key, want bool) {
	t.Helper()
	got, err := b.ThreadBusy(t.Context(), key)
	if err != nil || got != want {
		t.Errorf("ThreadBusy(%s) = %v, %v; want %v", key, got, err, want)
	}
}

func testThreadBusy(t *testing.T, x *h, peer session.Backend) {
	a := backend(t, x.st)
	busy(t, peer, keyA, false)

	// Queued on one replica, no turn stored yet: busy for the other.
	enqueue(t, a, keyA, "m1", "r1", true)
	busy(t, peer, keyA, true)
	busy(t, peer, keyB, false)
	p, _ := next(t, a, keyA, "r1", 0)
	// Handled and the queue drained: the lease went with it.
	if _, ok := next(t, a, keyA, "r1", p.Seq); ok {
		t.Fatal("NextPending after the only message: ok; want the queue empty")
	}
	busy(t, peer, keyA, false)

	// A held lease alone (a claimed thread) is busy until it expires.
	acquire(t, a, keyB, "r1", true)
	busy(t, peer, keyB, true)
	x.clock.Advance(ttl)
	busy(t, peer, keyB, false)

	// A message left queued by a dead holder keeps the thread busy.
	enqueue(t, a, keyC, "m1", "dead", true)
	x.clock.Advance(2 * ttl)
	busy(t, peer, keyC, true)
}
