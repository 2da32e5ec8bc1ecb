package mcp

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/config"
)

// A server's credentials go to its own origin only: when its endpoint
// redirects elsewhere (a moved host, an open redirect, a proxy's), the
// redirect is not followed with them, whatever header carries them.
func TestClientCredentialsDoNotFollowARedirect(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	t.Cleanup(elsewhere.Close)
	// Another host name for the same listener, so the redirect crosses
	// hosts as Go's client sees them.
	u, err := url.Parse(elsewhere.URL)
	if err != nil {
		t.Fatal(err)
	}
	target := "http://localhost:" + u.Port() + "/mcp"
	origin := httptest.NewServer(http.RedirectHandler(target, http.StatusTemporaryRedirect))
	t.Cleanup(origin.Close)

	spec := config.MCPServer{Name: "moved", URL: origin.URL, Channels: []string{"*"},
		Headers: map[string]string{"Authorization": "HTTP_AUTH", "X-Api-Key": "STDIO_SECRET"}}
	f := newClientFixture(t, 5*time.Second, spec)
	_ = f.toolbox("")
	if h := f.c.Health(); len(h) != 1 || h[0].State == StateReady {
		t.Errorf("health %+v: want the server not ready", h)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.Contains(s, httpAuth) || strings.Contains(s, stdioSecret) {
			t.Errorf("the redirect's target got the credentials: %q", s)
		}
	}
}
