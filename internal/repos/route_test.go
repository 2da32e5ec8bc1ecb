package repos

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// routingManager has local repos only: routing reads configuration, not
// checkouts.
func routingManager(t *testing.T) *Manager {
	t.Helper()
	dir := t.TempDir()
	return newManager(t, []Spec{
		{Name: "docs", Path: dir, Channels: []string{"*"}, DefaultFor: []string{"dm"}},
		{Name: "payments", Path: dir, Channels: []string{"C0123PAY", "C0456OPS"}},
		{Name: "infra", Path: dir, Channels: []string{"C0456OPS", "dm"}, DefaultFor: []string{"C0456OPS"}},
		{Name: "secret", Path: dir, Channels: []string{"C0999SEC"}},
	}, Options{})
}

func TestForChannel(t *testing.T) {
	m := routingManager(t)
	for _, tc := range []struct {
		channel string
		want    []string
	}{
		{"C0123PAY", []string{"payments", "docs"}},          // listed by ID beats "*", though docs comes first
		{"C0456OPS", []string{"infra", "docs", "payments"}}, // default_for
		{"D0001", []string{"docs", "infra"}},                // default_for: dm beats a repo listing dm
		{"C0555XYZ", []string{"docs"}},                      // only through "*"
		{"C0999SEC", []string{"secret", "docs"}},
	} {
		if diff := cmp.Diff(tc.want, m.ForChannel(tc.channel)); diff != "" {
			t.Errorf("ForChannel(%s) (-want +got):\n%s", tc.channel, diff)
		}
	}
}

func TestResolve(t *testing.T) {
	m := routingManager(t)
	for _, tc := range []struct {
		name, channel, text string
		repo, question      string
		choices             []string // set when an *UnknownRepoError is wanted
	}{
		{"channel default", "C0123PAY", " how are refunds retried? ", "payments", "how are refunds retried?", nil},
		{"named with colon", "C0123PAY", "in docs: where is the guide?", "docs", "where is the guide?", nil},
		{"named with comma, any case", "C0123PAY", "In DOCS, where is the guide?", "docs", "where is the guide?", nil},
		{"spaces around the choice", "C0123PAY", "  in   payments :  how?", "payments", "how?", nil},
		{"choice without a question", "C0123PAY", "in payments:", "payments", "", nil},
		{"unknown name", "C0123PAY", "in paymnts: how?", "", "", []string{"payments", "docs"}},
		{"configured but not here (colon)", "C0123PAY", "in secret: show me", "", "", []string{"payments", "docs"}},
		{"configured but not here (comma)", "C0123PAY", "in secret, show me", "payments", "in secret, show me", nil},
		{"unknown word before a colon", "C0123PAY", "in handler: why?", "", "", []string{"payments", "docs"}},
		{"English, not a choice", "C0123PAY", "In general, how does retry work?", "payments", "In general, how does retry work?", nil},
		{"a file, not a choice", "C0123PAY", "in main.go: what does run do?", "payments", "in main.go: what does run do?", nil},
		{"a path, not a choice", "C0123PAY", "in cmd/bot: what runs?", "payments", "in cmd/bot: what runs?", nil},
		{"no space after in", "C0123PAY", "inpayments: x", "payments", "inpayments: x", nil},
		{"default_for", "C0456OPS", "what broke?", "infra", "what broke?", nil},
		{"default_for, other repo named", "C0456OPS", "in payments: what broke?", "payments", "what broke?", nil},
		{"DM default", "D0001", "hi", "docs", "hi", nil},
		{"DM named", "D0001", "in infra: deploys?", "infra", "deploys?", nil},
		{"DM, repo not for DMs", "D0001", "in payments: x", "", "", []string{"docs", "infra"}},
		{"only through *", "C0555XYZ", "q", "docs", "q", nil},
		{"only through *, other named", "C0555XYZ", "in payments: q", "", "", []string{"docs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, q, err := m.Resolve(tc.channel, tc.text)
			if tc.choices != nil {
				var ue *UnknownRepoError
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnknownRepo) {
					t.Fatalf("Resolve = %q, %q, %v; want an UnknownRepoError", repo, q, err)
				}
				if diff := cmp.Diff(tc.choices, ue.Choices); diff != "" {
					t.Errorf("choices (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil || repo != tc.repo || q != tc.question {
				t.Errorf("Resolve = %q, %q, %v; want %q, %q", repo, q, err, tc.repo, tc.question)
			}
		})
	}
}

func TestResolveNoRepo(t *testing.T) {
	m := newManager(t, []Spec{{Name: "a", Path: t.TempDir(), Channels: []string{"C1"}}}, Options{})
	for _, ch := range []string{"C2", "D1", ""} {
		if _, _, err := m.Resolve(ch, "in a: read it"); !errors.Is(err, ErrNoRepo) {
			t.Errorf("Resolve(%q) = %v, want ErrNoRepo", ch, err)
		}
		if got := m.ForChannel(ch); len(got) != 0 {
			t.Errorf("ForChannel(%q) = %v, want none", ch, got)
		}
	}
}

func TestUnknownRepoMessage(t *testing.T) {
	for _, tc := range []struct {
		err  UnknownRepoError
		want string
	}{
		{UnknownRepoError{Name: "paymnts", Choices: []string{"payments"}},
			`there is no repository called "paymnts" here; this channel can use payments (start the question with "in payments:")`},
		{UnknownRepoError{Name: "x", Choices: []string{"payments", "docs"}},
			`there is no repository called "x" here; this channel can use payments, docs (start the question with "in payments:" to pick one)`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q\nwant      %q", got, tc.want)
		}
	}
}

// A channel learns nothing of the repositories it may not use: a question
// naming one is treated as one naming a repository that does not exist,
// in every form of the choice.
func TestResolveTellsNothingOfOtherRepos(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, []Spec{
		{Name: "payments", Path: dir, Channels: []string{"C0123PAY"}},
		{Name: "secret", Path: dir, Channels: []string{"C0999SEC"}},
		{Name: "ops.tools", Path: dir, Channels: []string{"C0999SEC"}},
	}, Options{})
	for _, pair := range [][2]string{{"secret", "nosuch"}, {"ops.tools", "no.such"}} {
		for _, form := range []string{"in %s, show me", "in %s: show me", "In %s , show me"} {
			taken, free := fmt.Sprintf(form, pair[0]), fmt.Sprintf(form, pair[1])
			repo1, q1, err1 := m.Resolve("C0123PAY", taken)
			repo2, q2, err2 := m.Resolve("C0123PAY", free)
			got1 := fmt.Sprintf("%s|%s|%v", repo1, strings.ReplaceAll(q1, pair[0], "X"), err1)
			got2 := fmt.Sprintf("%s|%s|%v", repo2, strings.ReplaceAll(q2, pair[1], "X"), err2)
			if strings.ReplaceAll(got1, pair[0], "X") != strings.ReplaceAll(got2, pair[1], "X") {
				t.Errorf("%q and %q are told apart:\n%s\n%s", taken, free, got1, got2)
			}
		}
	}
}
