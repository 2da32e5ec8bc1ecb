package render

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFeedbackBlockRoundTrips(t *testing.T) {
	b, err := json.Marshal(Feedback("t-42"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"type":"context_actions"`, `"type":"feedback_buttons"`, `"value":"up:t-42"`, `"value":"down:t-42"`, `"action_id":"` + FeedbackActionID + `"`} {
		if !strings.Contains(s, want) {
			t.Errorf("feedback block %s lacks %s", s, want)
		}
	}
	tests := []struct {
		value, rating, turn string
		ok                  bool
	}{
		{"up:t-42", RatingUp, "t-42", true},
		{"down:t:1", RatingDown, "t:1", true},
		{"sideways:t-42", "", "", false},
		{"up:", "", "", false},
		{"up", "", "", false},
	}
	for _, tc := range tests {
		r, id, ok := ParseFeedback(tc.value)
		if r != tc.rating || id != tc.turn || ok != tc.ok {
			t.Errorf("ParseFeedback(%q) = %q, %q, %v; want %q, %q, %v", tc.value, r, id, ok, tc.rating, tc.turn, tc.ok)
		}
	}
}
