package sessiontest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/session"
)

func receive(t *testing.T, st session.Store, key, data, owner string, hold time.Duration, want bool) {
	t.Helper()
	got, err := st.Receive(t.Context(), key, []byte(data), owner, hold, time.Hour)
	if err != nil || got != want {
		t.Fatalf("Receive(%s) by %s = %v, %v; want %v", key, owner, got, err, want)
	}
}

func claimReceived(t *testing.T, st session.Store, owner string) []string {
	t.Helper()
	rs, err := st.ClaimReceived(t.Context(), owner, ttl)
	if err != nil {
		t.Fatalf("ClaimReceived(%s): %v", owner, err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.Key+"="+string(r.Data))
	}
	return out
}

// testReceiveOnce is a redelivery, and one message delivered to two
// replicas: the second Receive of a key records nothing, on either handle,
// handled or not, until the key's ttl has passed.
func testReceiveOnce(t *testing.T, x *h, peer session.Backend) {
	receive(t, x.st, "msg:T1:C1:1.1", "first", "a", ttl, true)
	receive(t, x.st, "msg:T1:C1:1.1", "again", "a", ttl, false)
	receive(t, peer, "msg:T1:C1:1.1", "other replica", "b", ttl, false)
	if err := x.st.Handled(t.Context(), "msg:T1:C1:1.1"); err != nil {
		t.Fatal(err)
	}
	receive(t, peer, "msg:T1:C1:1.1", "after handled", "b", ttl, false)
	if err := x.st.Handled(t.Context(), "msg:unknown"); err != nil {
		t.Errorf("Handled(unknown) = %v; want nil", err)
	}
	x.clock.Advance(time.Hour)
	receive(t, peer, "msg:T1:C1:1.1", "after expiry", "b", 0, true)
	diff(t, "claimed after expiry", []string{"msg:T1:C1:1.1=after expiry"}, claimReceived(t, x.st, "c"))
}

// testClaimReceived is a replica that died after recording events and
// before handing them on: they come back, oldest first, once its hold has
// passed, and not while a live replica holds them.
func testClaimReceived(t *testing.T, x *h, peer session.Backend) {
	receive(t, x.st, "e1", "one", "dead", ttl, true)
	x.clock.Advance(time.Second)
	receive(t, x.st, "e2", "two", "dead", ttl, true)
	x.clock.Advance(time.Second)
	receive(t, x.st, "e3", "three", "dead", ttl, true)
	x.clock.Advance(time.Second)
	receive(t, x.st, "e4", "handled", "dead", 0, true)
	if err := x.st.Handled(t.Context(), "e4"); err != nil {
		t.Fatal(err)
	}
	if got := claimReceived(t, peer, "b"); len(got) != 0 {
		t.Fatalf("claimed %v while their holder's hold runs; want none", got)
	}
	x.clock.Advance(ttl)
	if err := x.st.Handled(t.Context(), "e2"); err != nil {
		t.Fatal(err)
	}
	diff(t, "claimed", []string{"e1=one", "e3=three"}, claimReceived(t, peer, "b"))
	// Now held by b: nobody else takes them until b's hold passes.
	if got := claimReceived(t, x.st, "c"); len(got) != 0 {
		t.Errorf("claimed %v held by a live claimer; want none", got)
	}
	x.clock.Advance(ttl)
	diff(t, "claimed again after the claimer's hold", []string{"e1=one", "e3=three"}, claimReceived(t, x.st, "c"))

	// A single process passes a hold of zero: the next start takes
	// everything left at once. An event not handled within its ttl is
	// given up.
	receive(t, x.st, "e5", "five", "a", 0, true)
	diff(t, "claimed with no hold", []string{"e5=five"}, claimReceived(t, x.st, "next-start"))
	x.clock.Advance(2 * time.Hour)
	if got := claimReceived(t, x.st, "c"); len(got) != 0 {
		t.Errorf("claimed %v after their ttl; want none", got)
	}
	if _, err := x.st.Purge(t.Context(), base); err != nil {
		t.Fatal(err)
	}
	receive(t, x.st, "e1", "one again", "a", 0, true)
}

func testClaimReceivedRace(t *testing.T, x *h, peer session.Backend) {
	var keys []string
	for i := range 40 {
		k := fmt.Sprintf("e%02d", i)
		keys = append(keys, k+"=d")
		receive(t, x.st, k, "d", "dead", 0, true)
	}
	var (
		mu  sync.Mutex
		got []string
		wg  sync.WaitGroup
	)
	for i, st := range []session.Store{x.st, peer, x.st, peer} {
		wg.Go(func() {
			rs, err := st.ClaimReceived(t.Context(), fmt.Sprintf("r%d", i), ttl)
			if err != nil {
				t.Errorf("ClaimReceived: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				got = append(got, r.Key+"="+string(r.Data))
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	diff(t, "events claimed by racing claimers", keys, got)
}

func addPart(t *testing.T, st session.Store, turnID string, n int, ts string) error {
	t.Helper()
	return st.AddPart(t.Context(), turnID, n, ts)
}

func testAddPart(t *testing.T, x *h, peer session.Backend) {
	mustStart(t, x.st, "t1", keyA, "q")
	if got := mustTurn(t, x.st, "t1").Parts; got != nil {
		t.Errorf("parts of a new turn = %v; want none", got)
	}
	for n, ts := range []string{"1700000001.000100", "1700000001.000200"} {
		if err := addPart(t, x.st, "t1", n, ts); err != nil {
			t.Fatalf("AddPart(%d): %v", n, err)
		}
	}
	if err := addPart(t, peer, "t1", 1, "1700000001.000200"); err != nil {
		t.Errorf("AddPart of a recorded part again = %v; want nil", err)
	}
	if err := addPart(t, x.st, "t1", 1, "1700000009.000000"); err == nil {
		t.Error("AddPart of a recorded part with another ts = nil; want an error")
	}
	if err := addPart(t, x.st, "t1", 3, "1700000001.000400"); err == nil {
		t.Error("AddPart skipping a part = nil; want an error")
	}
	want := []string{"1700000001.000100", "1700000001.000200"}
	diff(t, "parts", want, mustTurn(t, peer, "t1").Parts)
	unf, err := x.st.Unfinished(t.Context())
	if err != nil || len(unf) != 1 {
		t.Fatalf("Unfinished = %v, %v", unf, err)
	}
	diff(t, "parts of the unfinished turn", want, unf[0].Parts)

	// The turn that continues a cut-off one posts the rest.
	if err := x.st.ContinueTurn(t.Context(), "t1", session.Turn{ID: "t2"}); err != nil {
		t.Fatal(err)
	}
	diff(t, "parts of the continuing turn", want, mustTurn(t, x.st, "t2").Parts)
	wantErrIs(t, "AddPart(continued turn)", addPart(t, x.st, "t1", 2, "1700000001.000300"), session.ErrTurnEnded)
	if err := addPart(t, x.st, "t2", 2, "1700000001.000300"); err != nil {
		t.Fatal(err)
	}
	diff(t, "parts", append(want, "1700000001.000300"), mustTurn(t, x.st, "t2").Parts)
	wantErrIs(t, "AddPart(unknown)", addPart(t, x.st, "nope", 0, "1.1"), session.ErrNotFound)
	mustEnd(t, x.st, "t2", session.TurnDone)
	wantErrIs(t, "AddPart(ended)", addPart(t, x.st, "t2", 3, "1700000001.000400"), session.ErrTurnEnded)
}
