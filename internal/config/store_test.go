package config

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestStoreSetting(t *testing.T) {
	tests := []struct {
		name, value string
		want        string // Reveal()ed value; "" for an error
	}{
		{"default", "", "sqlite"},
		{"sqlite", "SQLite", "sqlite"},
		{"memory", "memory", "memory"},
		{"postgres", "postgres://bot:pw-123@db:5432/askrepo?sslmode=disable", "postgres://bot:pw-123@db:5432/askrepo?sslmode=disable"},
		{"postgresql", "postgresql://bot:pw-123@db/askrepo", "postgresql://bot:pw-123@db/askrepo"},
		{"no host", "postgres://", ""},
		{"unparsable", "postgres://bot:pw-123@db:%zz/x", ""},
		{"other database", "mysql://bot:pw-123@db/askrepo", ""},
		{"typo", "sqlit", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"BOT_STORE": tc.value}
			c, err := Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("BOT_STORE=%q loaded; want an error", tc.value)
				}
				if strings.Contains(err.Error(), "pw-123") {
					t.Errorf("error shows the password: %v", err)
				}
				return
			}
			if err != nil && strings.Contains(err.Error(), "BOT_STORE") {
				t.Fatalf("BOT_STORE=%q: %v", tc.value, err)
			}
			if got := c.Store.Reveal(); got != tc.want {
				t.Errorf("Store = %q; want %q", got, tc.want)
			}
			var logged strings.Builder
			slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "store", c.Store, "config", c)
			for _, out := range []string{fmt.Sprintf("%v %+v %#v", c, c, c), logged.String()} {
				if strings.Contains(out, "pw-123") {
					t.Errorf("the store URL's password is printed: %s", out)
				}
			}
		})
	}
}
