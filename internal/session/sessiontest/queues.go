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
