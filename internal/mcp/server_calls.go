package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askrepo/askrepo/internal/repos"
	budgets "github.com/askrepo/askrepo/internal/usage"
)

// metrics are the server's Prometheus series.
type metrics struct {
	calls        *prometheus.CounterVec
	seconds      *prometheus.HistogramVec
	unauthorized prometheus.Counter
	// spend is what asks spent, in the series Slack's turns count in.
	spend *budgets.Metrics
}

func newMetrics(reg prometheus.Registerer, prices budgets.Prices) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "askrepo", Name: "mcp_calls_total",
			Help: "MCP tool calls, by token name, tool and outcome (ok, error: the tool said so, refused: a repository the token may not read or a bad argument, limited: over BOT_MCP_RATE)."},
			[]string{"token", "tool", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "askrepo", Name: "mcp_call_seconds",
			Help: "Time of one MCP tool call, by tool.", Buckets: prometheus.ExponentialBuckets(0.005, 4, 9)}, []string{"tool"}),
		unauthorized: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "askrepo", Name: "mcp_unauthorized_total",
			Help: "Requests to /mcp refused for a bearer token that is not configured."}),
	}
	if reg == nil {
		reg = prometheus.NewRegistry() // counted, shown nowhere
	}
	for _, c := range []prometheus.Collector{m.calls, m.seconds, m.unauthorized} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register MCP metrics: %w", err)
		}
	}
	var err error
	if m.spend, err = budgets.NewMetrics(reg, prices); err != nil {
		return nil, fmt.Errorf("register MCP metrics: %w", err)
	}
	return m, nil
}

// Outcomes of a call, as logged and counted.
const (
	outcomeOK      = "ok"
	outcomeError   = "error"
	outcomeRefused = "refused"
	outcomeLimited = "limited"
)

// refusal is a call refused before it ran: what the caller asked for is
// not theirs to read, not there, or not well formed. Its text is the
// caller's to read as it is.
type refusal struct{ error }

func refuse(err error) error { return refusal{err} }

// call is one call's work: it returns the result, and the repository it
// read for the log ("" when it never got that far).
type call func(ctx context.Context) (res *sdk.CallToolResult, repo string, err error)

// serve runs a call of tool for a, within a's rate, and logs and counts
// it. An error of run is the caller's to read (a refusal says what to do
// instead), never a protocol error: the call was understood.
func (s *Server) serve(ctx context.Context, a *access, tool string, run call) *sdk.CallToolResult {
	start := time.Now()
	outcome, repo := outcomeOK, ""
	defer func() {
		took := time.Since(start)
		s.metrics.calls.WithLabelValues(a.name, tool, outcome).Inc()
		s.metrics.seconds.WithLabelValues(tool).Observe(took.Seconds())
		s.log.Info("mcp call", "token", a.name, "tool", tool, "repo", repo, "outcome", outcome, "duration", took)
	}()
	if err := a.allow(); err != nil {
		outcome = outcomeLimited
		return errorResult("%v", err)
	}
	res, repo, err := run(ctx)
	switch {
	case errors.As(err, new(refusal)):
		outcome = outcomeRefused
		return errorResult("%v", err)
	case err != nil:
		outcome = outcomeError
		return errorResult("%v", err)
	case res.IsError:
		outcome = outcomeError
	}
	return res
}

// acquire leases repo for a call of a. The manager's error is the
// operators': a failed clone's names the host's paths and the remote. It
// is logged under a reference, and the caller reads only that the
// repository cannot be read now.
func (s *Server) acquire(ctx context.Context, a *access, repo string) (*repos.Lease, error) {
	lease, err := s.opts.Repos.Acquire(ctx, repo)
	if err == nil {
		return lease, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	ref := newID(3)
	s.log.Warn("mcp call cannot lease its repository", "token", a.name, "repo", repo, "ref", ref, "err", err)
	return nil, fmt.Errorf("repository %s is not available now (its checkout is being made or updated); try again in a minute, or tell askrepo's operators the reference %s", repo, ref)
}

// hidden is a failure of askrepo's own (its store) as the caller reads it:
// a reference to the log line that has err, whose words (a database's
// host or file, a driver's message) are the operators'.
func (s *Server) hidden(a *access, what string, err error) error {
	ref := newID(3)
	s.log.Error("mcp call failed: "+what, "token", a.name, "ref", ref, "err", err)
	return fmt.Errorf("askrepo could not %s; try again, or tell askrepo's operators the reference %s", what, ref)
}
