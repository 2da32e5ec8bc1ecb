package repos

import (
	"strings"
	"testing"
)

// A repository's name is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting
// with a letter or digit.
func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"payments", true},
		{"a", true},
		{"0.x_y-z", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"-a", false},
		{".a", false},
		{"Payments", false},
		{"pay ments", false},
		{"paymé", false},
		{"pay\nments", false},
	} {
		err := Validate([]Spec{{Name: tc.name, Path: "/srv/x", Channels: []string{"*"}}})
		if bad := err != nil && strings.Contains(err.Error(), "name "); bad == tc.ok {
			t.Errorf("Validate(name %q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
