package sessiontest

import (
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
)

// runFeedbackTests runs the contract of session.Feedbacks: a rating is
// stored with its turn, a second one by the same user replaces the first,
// a rating of an unknown turn or a malformed one is refused, ratings are
// listed newest first with what they rate, go with a purged thread, are
// shared by replicas (Shared) and survive a reopen (Durable).
func runFeedbackTests(t *testing.T, s Suite) {
	cases := []leaseCase{
		{"a rating is stored with its turn and listed with it", testRate},
		{"a second rating by the same user replaces the first", testRateReplaces},
		{"unknown turns and malformed ratings are refused", testRateRefused},
		{"listing is newest first, since a time, up to a limit", testFeedbackSince},
		{"later counts the questions asked after the rated one", testFeedbackLater},
		{"ratings go with a purged thread", testFeedbackPurged},
	}
	if s.Durable {
		cases = append(cases, leaseCase{"ratings survive close and reopen", testFeedbackReopen})
	}
	runPeerCases(t, s, cases)
}

func feedbacks(t *testing.T, st session.Store) session.Feedbacks {
	t.Helper()
	return mustImplement[session.Feedbacks](t, st)
}

func mustRate(t *testing.T, f session.Feedbacks, fb session.Feedback) {
	t.Helper()
	if err := f.Rate(t.Context(), fb); err != nil {
		t.Fatalf("Rate(%+v): %v", fb, err)
	}
}

func listFeedback(t *testing.T, f session.Feedbacks, since time.Time, limit int) []session.Rated {
	t.Helper()
	got, err := f.FeedbackSince(t.Context(), since, limit)
	if err != nil {
		t.Fatalf("FeedbackSince: %v", err)
	}
	return got
}

// hostileComment is what a person may type: escapes for a terminal,
// a bidi override, Slack's own markup, lines that look like more entries.
const hostileComment = "wrong \x1b[2J\x1b]8;;http://evil\x07file\x1b]8;;\x07 \u202egnp.\u202c <!channel> *bold*\nrating: up\r\n"

func testRate(t *testing.T, x *h, b session.Backend) {
	peer := feedbacks(t, b)
	mustStart(t, x.st, "t1", keyA, "how does retry work?")
	if err := x.st.SetCommit(t.Context(), keyA, "c0ffee"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, x.st, "t1", []llm.Message{answer("It retries.")}, llm.Usage{})
	mustEnd(t, x.st, "t1", session.TurnDone)
	x.clock.Advance(time.Minute)
	// The click lands on the peer; the store is shared.
	mustRate(t, peer, session.Feedback{TurnID: "t1", User: "U7", Rating: session.RatingDown, Reason: "wrong", Comment: hostileComment})
	got := listFeedback(t, feedbacks(t, x.st), time.Time{}, 0)
	if len(got) != 1 {
		t.Fatalf("FeedbackSince = %d ratings; want 1", len(got))
	}
	r := got[0]
	want := session.Feedback{TurnID: "t1", User: "U7", Rating: session.RatingDown, Reason: "wrong", Comment: hostileComment, Time: base.Add(time.Minute)}
	diff(t, "rating", want, r.Feedback)
	if r.Turn.ID != "t1" || r.Turn.Key != keyA || r.Turn.Question != "how does retry work?" || r.Turn.State != session.TurnDone {
		t.Errorf("rated turn = %+v; want t1 of %s, its question, done", r.Turn, keyA)
	}
	if r.Repo != "repo-a" || r.Commit != "c0ffee" || r.Later != 0 {
		t.Errorf("repo, commit, later = %q, %q, %d; want repo-a, c0ffee, 0", r.Repo, r.Commit, r.Later)
	}
}

func testRateReplaces(t *testing.T, x *h, b session.Backend) {
	peer := feedbacks(t, b)
	mustStart(t, x.st, "t1", keyA, "Q1")
	a := feedbacks(t, x.st)
	mustRate(t, a, session.Feedback{TurnID: "t1", User: "U7", Rating: session.RatingDown, Reason: "too_long", Comment: "shorter"})
	mustRate(t, a, session.Feedback{TurnID: "t1", User: "U8", Rating: session.RatingUp})
	x.clock.Advance(time.Second)
	mustRate(t, peer, session.Feedback{TurnID: "t1", User: "U7", Rating: session.RatingUp})
	got := listFeedback(t, a, time.Time{}, 0)
	var fbs []session.Feedback
	for _, r := range got {
		fbs = append(fbs, r.Feedback)
	}
	diff(t, "ratings", []session.Feedback{
		{TurnID: "t1", User: "U7", Rating: session.RatingUp, Time: base.Add(time.Second)},
		{TurnID: "t1", User: "U8", Rating: session.RatingUp, Time: base},
	}, fbs)
}

func testRateRefused(t *testing.T, x *h, b session.Backend) {
	peer := feedbacks(t, b)
	mustStart(t, x.st, "t1", keyA, "Q1")
	for _, tc := range []struct {
		name string
		fb   session.Feedback
		want error
	}{
		{"unknown turn", session.Feedback{TurnID: "forged", User: "U7", Rating: session.RatingUp}, session.ErrNotFound},
		{"no user", session.Feedback{TurnID: "t1", Rating: session.RatingUp}, session.ErrBadFeedback},
		{"sideways", session.Feedback{TurnID: "t1", User: "U7", Rating: "sideways"}, session.ErrBadFeedback},
		{"long reason", session.Feedback{TurnID: "t1", User: "U7", Rating: session.RatingDown, Reason: strings.Repeat("r", 65)}, session.ErrBadFeedback},
		{"long comment", session.Feedback{TurnID: "t1", User: "U7", Rating: session.RatingDown, Comment: strings.Repeat("é", session.MaxFeedbackComment+1)}, session.ErrBadFeedback},
	} {
		wantErrIs(t, tc.name, peer.Rate(t.Context(), tc.fb), tc.want)
	}
	if got := listFeedback(t, peer, time.Time{}, 0); len(got) != 0 {
		t.Errorf("refused ratings were stored: %+v", got)
	}
	// The longest comment allowed is taken.
	mustRate(t, peer, session.Feedback{TurnID: "t1", User: "U7", Rating: session.RatingDown, Comment: strings.Repeat("é", session.MaxFeedbackComment)})
}

func testFeedbackSince(t *testing.T, x *h, b session.Backend) {
	peer := feedbacks(t, b)
	mustStart(t, x.st, "t1", keyA, "Q1")
	mustStart(t, x.st, "t2", keyB, "Q2")
	mustRate(t, peer, session.Feedback{TurnID: "t1", User: "U1", Rating: session.RatingUp})
	x.clock.Advance(time.Hour)
	mustRate(t, peer, session.Feedback{TurnID: "t2", User: "U1", Rating: session.RatingDown})
	x.clock.Advance(time.Hour)
	mustRate(t, peer, session.Feedback{TurnID: "t1", User: "U2", Rating: session.RatingDown})
	ids := func(rs []session.Rated) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.TurnID+"/"+r.User)
		}
		return out
	}
	a := feedbacks(t, x.st)
	diff(t, "all", []string{"t1/U2", "t2/U1", "t1/U1"}, ids(listFeedback(t, a, time.Time{}, 0)))
	diff(t, "since an hour in", []string{"t1/U2", "t2/U1"}, ids(listFeedback(t, a, base.Add(time.Hour), 0)))
	diff(t, "limit 1", []string{"t1/U2"}, ids(listFeedback(t, a, time.Time{}, 1)))
}

func testFeedbackLater(t *testing.T, x *h, b session.Backend) {
	peer := feedbacks(t, b)
	mustStart(t, x.st, "t1", keyA, "Q1")
	mustEnd(t, x.st, "t1", session.TurnDone)
	x.clock.Advance(time.Second)
	mustStart(t, x.st, "t2", keyA, "Q2")
	if err := x.st.SetTurnState(t.Context(), "t2", session.TurnInterrupted); err != nil {
		t.Fatal(err)
	}
	x.clock.Advance(time.Second)
	// t2 is cut off and continued by t3: one question between them.
	if err := x.st.ContinueTurn(t.Context(), "t2", session.Turn{ID: "t3", Key: keyA}); err != nil {
		t.Fatal(err)
	}
	mustEnd(t, x.st, "t3", session.TurnDone)
	x.clock.Advance(time.Second)
	mustStart(t, x.st, "t4", keyA, "Q4")
	mustStart(t, x.st, "t5", keyB, "other thread")
	for _, id := range []string{"t1", "t3", "t4"} {
		mustRate(t, peer, session.Feedback{TurnID: id, User: "U1", Rating: session.RatingUp})
	}
	later := map[string]int{}
	for _, r := range listFeedback(t, peer, time.Time{}, 0) {
		later[r.TurnID] = r.Later
	}
	diff(t, "questions after each rated turn", map[string]int{"t1": 2, "t3": 1, "t4": 0}, later)
}

func testFeedbackPurged(t *testing.T, x *h, b session.Backend) {
	peer := feedbacks(t, b)
	mustStart(t, x.st, "t1", keyA, "Q1")
	mustStart(t, x.st, "t2", keyB, "Q2")
	x.clock.Advance(time.Hour)
	mustStart(t, x.st, "t3", keyB, "Q3") // keeps keyB's session alive
	mustRate(t, peer, session.Feedback{TurnID: "t1", User: "U1", Rating: session.RatingUp})
	mustRate(t, peer, session.Feedback{TurnID: "t2", User: "U1", Rating: session.RatingUp})
	if _, err := x.st.Purge(t.Context(), base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got := listFeedback(t, peer, time.Time{}, 0)
	if len(got) != 1 || got[0].TurnID != "t2" {
		t.Errorf("after purging %s: ratings %+v; want only t2's", keyA, got)
	}
	wantErrIs(t, "rating a purged turn", peer.Rate(t.Context(), session.Feedback{TurnID: "t1", User: "U1", Rating: session.RatingUp}), session.ErrNotFound)
}

func testFeedbackReopen(t *testing.T, x *h, _ session.Backend) {
	mustStart(t, x.st, "t1", keyA, "Q1")
	mustRate(t, feedbacks(t, x.st), session.Feedback{TurnID: "t1", User: "U1", Rating: session.RatingDown, Reason: "other", Comment: hostileComment})
	x.reopen()
	got := listFeedback(t, feedbacks(t, x.st), time.Time{}, 0)
	if len(got) != 1 || got[0].Comment != hostileComment || got[0].Reason != "other" {
		t.Errorf("after reopen: %+v; want t1's rating down with its comment", got)
	}
}
