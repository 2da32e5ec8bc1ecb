package sessiontest

import (
	"fmt"
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
	runPeerCases(t, s, cases)
}

// runPeerCases runs each case on a fresh store and its peer.
func runPeerCases(t *testing.T, s Suite, cases []leaseCase) {
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
	return mustImplement[session.Backend](t, st)
}

// mustImplement is st as an I, which every store must implement.
func mustImplement[I any](t *testing.T, st session.Store) I {
	t.Helper()
	v, ok := st.(I)
	if !ok {
		t.Fatalf("%T does not implement %T; every store must", st, (*I)(nil))
	}
	return v
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
