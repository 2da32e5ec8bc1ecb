package turn

import (
	"context"
	"errors"
	"testing"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
)

// quotaFunc is a Quota from a function.
type quotaFunc func(key session.Key, user, repo string) error

func (f quotaFunc) Admit(_ context.Context, key session.Key, user, repo string) error {
	return f(key, user, repo)
}

// A question the Quota refuses stores no turn and sends the model
// nothing; the Quota is asked with the thread, the person and the
// repository.
func TestRunAsksQuotaFirst(t *testing.T) {
	store := session.NewMemory()
	model := &scriptModel{}
	r := newTestRunner(t, store, model)
	refuse := errors.New("over budget")
	var asked []string
	r.cfg.Quota = quotaFunc(func(key session.Key, user, repo string) error {
		asked = append(asked, key.Channel+" "+user+" "+repo)
		return refuse
	})
	key := session.Key{Team: "T", Channel: "C9", Thread: "1.0"}
	res, err := r.Run(t.Context(), Request{Key: key, Lease: &repos.Lease{}, Repo: "widget", User: "U3", Question: "q", TurnID: "t1"})
	if !errors.Is(err, refuse) || res.Started {
		t.Fatalf("Run = %+v, %v; want the Quota's refusal, not started", res, err)
	}
	if n := len(model.requests()); n != 0 {
		t.Errorf("model got %d requests; want none", n)
	}
	if _, err := store.Turn(t.Context(), "t1"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("turn stored (%v); want none for a refused question", err)
	}
	if len(asked) != 1 || asked[0] != "C9 U3 widget" {
		t.Errorf("Quota asked %q; want once for C9 U3 widget", asked)
	}
}

// A turn is stored with the repository and the model it used: what
// budgets and the usage report count by.
func TestRunRecordsRepoAndModel(t *testing.T) {
	store := session.NewMemory()
	r := newTestRunner(t, store, &scriptModel{})
	key := session.Key{Team: "T", Channel: "C9", Thread: "1.0"}
	if _, err := r.Run(t.Context(), Request{Key: key, Lease: &repos.Lease{}, Repo: "widget", User: "U3", Question: "q", TurnID: "t1"}); err != nil {
		t.Fatal(err)
	}
	got, err := store.Turn(t.Context(), "t1")
	if err != nil || got.Repo != "widget" || got.Model != "m" {
		t.Errorf("stored turn repo %q model %q (%v); want widget, m", got.Repo, got.Model, err)
	}
}
