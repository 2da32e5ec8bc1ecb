package mcp_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/mcp"
)

// alternate sends each request to the next of urls in turn, with the
// bearer token: a load balancer in front of replicas that keeps no
// affinity. hits counts the requests each URL got.
type alternate struct {
	token string
	urls  []*url.URL
	n     atomic.Int64
	hits  []atomic.Int64
}

func (a *alternate) RoundTrip(r *http.Request) (*http.Response, error) {
	i := int(a.n.Add(1)-1) % len(a.urls)
	a.hits[i].Add(1)
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = a.urls[i].Scheme, a.urls[i].Host, a.urls[i].Host
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestAnyReplicaAnswersAnyRequest: /mcp is stateless, so two replicas on
// one store serve one client whose requests alternate between them: the
// handshake on one, calls on the other, and an ask's follow-up continued
// by the replica that did not answer the first.
func TestAnyReplicaAnswersAnyRequest(t *testing.T) {
	ai, model := scriptedModel(t)
	a := newFixture(t, fixtureOptions{model: model})
	b := otherReplica(t, a, model)

	var urls []*url.URL
	for _, raw := range []string{a.url, b} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	lb := &alternate{token: ciToken, urls: urls, hits: make([]atomic.Int64, 2)}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: a.url, HTTPClient: &http.Client{Transport: lb},
		DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect through both replicas: %v", err)
	}
	t.Cleanup(func() { cs.Close() })

	if got, isErr := call(t, cs, "read_file", map[string]any{"path": "main.go", "repo": "alpha"}); isErr || !strings.Contains(got, "func Hello") {
		t.Fatalf("read_file: %s", got)
	}
	first, res := ask(t, cs, map[string]any{"question": "where is Hello?", "repo": "alpha"})
	if res.IsError {
		t.Fatalf("ask: %s", text(res))
	}
	next, res := ask(t, cs, map[string]any{"question": "a follow-up", "conversation": first.Conversation})
	if res.IsError || next.Conversation != first.Conversation || next.Repo != "alpha" {
		t.Fatalf("the follow-up on the other replica: %s %+v", text(res), next)
	}
	last := ai.Request(t, ai.Count()-1)
	if last.Has("user", "where is Hello?") != 1 || last.Has("assistant", "Hello is defined") != 1 {
		t.Errorf("the follow-up's request lacks the first turn: %s", last.Body)
	}
	if lb.hits[0].Load() == 0 || lb.hits[1].Load() == 0 {
		t.Errorf("requests per replica %d, %d; want both used", lb.hits[0].Load(), lb.hits[1].Load())
	}
}

// otherReplica serves /mcp over f's repositories and store with a turn
// runner of its own, as a second replica does, and returns its URL.
func otherReplica(t *testing.T, f *fixture, model agent.Model) string {
	t.Helper()
	_, url := serve(t, mcp.Options{Repos: f.repos, Turns: newRunner(t, f.store, model, nil), Store: f.store,
		Logger: slog.New(slog.NewJSONHandler(&logtest.Buffer{}, nil)), Registry: prometheus.NewRegistry()})
	return url
}
