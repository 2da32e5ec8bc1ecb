package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/time/rate"

	"github.com/askrepo/askrepo/internal/config"
)

// access is one caller: a token's holder, or the local user of stdio.
type access struct {
	name string
	// sum is the token's SHA-256: comparing digests of equal length keeps
	// the comparison's time from telling a token's length.
	sum   [sha256.Size]byte
	repos []string // sorted; what it may read
	// limit bounds its tool calls; nil: none (the local user).
	limit *rate.Limiter
	per   int // calls a minute, for the refusal's wording
}

// newAccess checks t's repositories against all, the configured ones.
func newAccess(t config.MCPToken, all []string, perMinute int) (*access, error) {
	a := &access{name: t.Name, sum: sha256.Sum256([]byte(t.Token.Reveal())), repos: all, per: perMinute}
	if t.Repos != nil {
		var unknown []string
		for _, r := range t.Repos {
			if !slices.Contains(all, r) {
				unknown = append(unknown, r)
			}
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("token %q (%s) names repositories that are not configured: %s; the repositories are: %s",
				t.Name, t.Env, strings.Join(unknown, ", "), strings.Join(all, ", "))
		}
		a.repos = slices.Compact(slices.Sorted(slices.Values(t.Repos)))
	}
	if perMinute > 0 {
		a.limit = rate.NewLimiter(rate.Every(time.Minute/time.Duration(perMinute)), perMinute)
	}
	return a, nil
}

// may reports whether a may read repository name.
func (a *access) may(name string) bool { return slices.Contains(a.repos, name) }

// allow takes one call from a's budget, or says when the next one fits.
func (a *access) allow() error {
	if a.limit == nil || a.limit.Allow() {
		return nil
	}
	r := a.limit.Reserve()
	wait := r.Delay()
	r.Cancel()
	return fmt.Errorf("rate limit: this token may make %d tool calls a minute; try again in %s", a.per, wait.Round(time.Second)+time.Second)
}

// verify finds the caller of a bearer token (an auth.TokenVerifier). It
// compares the token with every configured one, in constant time each,
// and never stops at the first match, so neither a token's value nor its
// place in the list shows in how long a refusal takes.
func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	var found *access
	for _, a := range s.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.sum[:]) == 1 {
			found = a
		}
	}
	if found == nil {
		s.metrics.unauthorized.Inc()
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: found.name}, nil
}
