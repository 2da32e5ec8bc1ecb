package session

import (
	"cmp"
	"context"
	"slices"
)

func (m *Memory) UsageTotals(ctx context.Context, f UsageFilter) ([]UsageRow, error) {
	if _, err := usageGroup(f.By); err != nil {
		return nil, err
	}
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	type key struct{ group, model string }
	rows := map[key]*UsageRow{}
	for _, t := range m.turns {
		if !usageCounts(t, f) {
			continue
		}
		k := key{usageGroupOf(t, f.By), t.Model}
		r, ok := rows[k]
		if !ok {
			r = &UsageRow{Group: k.group, Model: k.model}
			rows[k] = r
		}
		r.Turns++
		if t.State == TurnDone {
			r.Answers++
		}
		r.Usage = r.Usage.Add(t.Usage)
	}
	out := make([]UsageRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b UsageRow) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Model, b.Model))
	})
	return out, nil
}

// usageCounts reports whether t is one of the turns f selects.
func usageCounts(t *Turn, f UsageFilter) bool {
	switch {
	case t.State == TurnContinued, t.Started.Before(f.Since):
		return false
	case !f.Until.IsZero() && !t.Started.Before(f.Until):
		return false
	case f.Channel != "" && (t.Key.Team != f.Team || t.Key.Channel != f.Channel):
		return false
	case f.User != "" && t.User != f.User, f.Repo != "" && t.Repo != f.Repo:
		return false
	}
	return true
}

func usageGroupOf(t *Turn, by UsageBy) string {
	switch by {
	case UsageByChannel:
		return t.Key.Channel
	case UsageByUser:
		return t.User
	case UsageByRepo:
		return t.Repo
	case UsageByModel:
		return t.Model
	}
	return ""
}
