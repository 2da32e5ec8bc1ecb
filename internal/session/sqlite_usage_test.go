package session

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSQLiteUsageUsesIndexes: each budget's sum finds its turns through an
// index, so a question's check does not scan every turn ever stored.
func TestSQLiteUsageUsesIndexes(t *testing.T) {
	st, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "s.db"), SQLiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		f    UsageFilter
		want string
	}{
		{UsageFilter{Since: since, User: "U1"}, "turns_user_started"},
		{UsageFilter{Since: since, Repo: "pay"}, "turns_repo_started"},
		{UsageFilter{Since: since, Team: "T1", Channel: "C1"}, "turns_session_started"},
		{UsageFilter{Since: since, By: UsageByModel}, "turns_started"},
	}
	for _, tc := range cases {
		q, args, err := usageQuery(tc.f, func(int) string { return "?" })
		if err != nil {
			t.Fatal(err)
		}
		rows, err := st.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, tc.want) {
			t.Errorf("plan for %+v = %s; want it to use %s", tc.f, p, tc.want)
		}
	}
}
