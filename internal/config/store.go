package config

import (
	"fmt"
	"net/url"
	"strings"
)

// setStore checks BOT_STORE: sqlite (the default), memory, or a PostgreSQL
// URL. The URL usually carries a password, so the value is kept as a
// Secret and an error never repeats it.
func setStore(c *Config, v string) error {
	switch strings.ToLower(v) {
	case "", "sqlite":
		c.Store = "sqlite"
		return nil
	case "memory":
		c.Store = "memory"
		return nil
	}
	if strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://") {
		if u, err := url.Parse(v); err != nil || u.Host == "" {
			return fmt.Errorf("want a URL such as postgres://user:password@host:5432/db, got one that does not parse (value not shown: it may hold a password)")
		}
		c.Store = Secret(v)
		return nil
	}
	scheme, _, found := strings.Cut(v, "://")
	if !found {
		scheme = "(no scheme)"
	}
	return fmt.Errorf("want sqlite, memory or a postgres:// URL, got a value with scheme %q", scheme)
}
