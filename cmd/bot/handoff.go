package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/handoff"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

// A bot tool run beside bot serve on the same data directory hands its
// call to the service (see package handoff), which has the checkout, its
// listing and its code index at hand: on a large repository that is a few
// milliseconds instead of tens. The service runs it only when it would
// give exactly what a local run gives: same build, same repository
// settings, same tool settings (toolKey). Otherwise, or when no service
// listens, bot tool runs the call itself.

// toolKey is what a tool call's result depends on besides the checkout:
// the build, the repository's settings, the tools' settings, and where git
// finds the user's excludes file (for a checkout's untracked files). A
// checkout's path is made absolute first: REPO_PATH=. (the default) in the
// service's working directory and in the caller's are two checkouts,
// however alike their names.
func toolKey(cfg config.Config, s repos.Spec, env func(string) (string, bool)) string {
	if s.Path != "" {
		abs, err := filepath.Abs(s.Path)
		if err != nil {
			return "" // matches nothing: the call runs locally
		}
		s.Path = abs
	}
	home, _ := env("HOME")
	xdg, _ := env("XDG_CONFIG_HOME")
	parts := struct {
		Build         string
		Spec          repos.Spec
		RepoDeny      []string
		Index         bool
		ToolTimeout   time.Duration
		Home, XDGHome string
	}{buildID(), s, cfg.RepoDeny, cfg.Index, cfg.ToolTimeout, home, xdg}
	b, err := json.Marshal(parts)
	if err != nil {
		return "" // matches nothing: the call runs locally
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// buildID tells builds apart: the version line, and the executable's size
// and modification time, which also tell two development builds of one
// commit apart, and an upgraded binary from the one the service runs.
func buildID() string {
	id := versionLine()
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			id += fmt.Sprintf(" %d %d", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return id
}

// runCall runs one tool call over repo the way a model's call runs: the
// same tools (tools.Default) in the same registry, with the same per-call
// timeout, over a lease on the checkout. A call that uses the code index
// waits for the index of the checkout's commit first, telling say (nil:
// nobody) while it is built; one that does not gets none, as a local run
// loads none.
func (c *core) runCall(ctx context.Context, repo string, call tools.Call, say func(string)) (tools.Result, error) {
	indexed := c.cfg.Index && usesIndex(call)
	if indexed {
		if err := waitIndex(ctx, c.repos, repo, say); err != nil {
			return tools.Result{}, err
		}
	}
	lease, err := c.repos.Acquire(ctx, repo)
	if err != nil {
		return tools.Result{}, err
	}
	defer lease.Release()
	opts := tools.Options{}
	if indexed {
		opts.Index = lease.Index
	}
	reg := tools.NewRegistry(tools.Default(lease.Workspace, opts)...)
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.cfg.ToolTimeout, agent.DefaultToolTimeout))
	defer cancel()
	return reg.Run(ctx, call), nil
}

// usesIndex reports whether call would read the code index: a file read,
// or a pattern with no literal to narrow by, would not.
func usesIndex(call tools.Call) bool {
	return tools.NewRegistry(tools.Default(nil, tools.Options{})...).UsesIndex(call)
}

// listenTools takes bot tool calls on the data directory's socket until
// the returned func is called. Where it cannot (another process listens,
// the platform cannot check the caller, the path is too long for a
// socket) it says so once and bot tool runs its calls itself.
func (s *service) listenTools(log *slog.Logger) (stop func()) {
	specs, err := repos.FromConfig(s.cfg)
	if err != nil {
		return func() {}
	}
	keys := make(map[string]string, len(specs))
	for _, sp := range specs {
		if k := toolKey(s.cfg, sp, s.env); k != "" { // "": no key, so no caller's
			keys[k] = sp.Name
		}
	}
	srv, err := handoff.Listen(s.cfg.DataDir, s.core.handOver(keys, log), handoff.Options{
		Timeout: handoffTimeout(s.cfg),
		Logger:  log,
	})
	if err != nil {
		log.Info("bot tool runs its calls itself: this process does not take them", "reason", err.Error())
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve()
	}()
	log.Debug("taking bot tool calls", "socket", srv.Addr())
	return func() {
		srv.Close()
		<-done
	}
}

// handoffTimeout bounds a handed-over call in the service: the tool's
// timeout twice over (for the index it may wait for, then for the call)
// and handoffIndexWait more.
func handoffTimeout(cfg config.Config) time.Duration {
	return 2*cmp.Or(cfg.ToolTimeout, agent.DefaultToolTimeout) + handoffIndexWait
}

// handoffIndexWait is the time a handed-over call gets besides its tool's
// timeout, to wait for the code index; handoffSlack is how much longer
// than the service's bound its caller waits before it gives up on a
// service that took the call and went silent (stopped with SIGSTOP, or
// wedged) and runs the call itself. Variables for the tests.
var handoffIndexWait, handoffSlack = time.Minute, 10 * time.Second

// handOver is the service's side of a handed-over call: run it over the
// repository whose key the caller's matches, or refuse.
func (c *core) handOver(keys map[string]string, log *slog.Logger) handoff.Handler {
	return func(ctx context.Context, req handoff.Request, progress func(string)) handoff.Response {
		repo, ok := keys[req.Key]
		if !ok {
			return handoff.Response{Refused: "no repository here has the caller's settings and build"}
		}
		start := time.Now()
		res, err := c.runCall(ctx, repo, tools.Call{ID: "cli", Name: req.Tool, Input: req.Input}, progress)
		if err != nil {
			return handoff.Response{Refused: err.Error()}
		}
		log.Debug("ran a bot tool call", "repo", repo, "tool", req.Tool, "is_error", res.IsError, "took", time.Since(start))
		return handoff.Response{Content: res.Content, Summary: res.Summary, IsError: res.IsError}
	}
}

// handToService runs call in the service on cfg's data directory, when
// one runs there with the same settings, passing say the progress it
// shows while it indexes for the call; ok false means run it here.
func handToService(ctx context.Context, cfg config.Config, env func(string) (string, bool), t toolTarget, call tools.Call, say func(string), log *slog.Logger) (res tools.Result, ok bool, err error) {
	if t.local || cfg.DataDir == "" {
		return tools.Result{}, false, nil
	}
	from := repos.FromConfig
	if t.pathOnly {
		from = repos.PathOnly
	}
	specs, err := from(cfg)
	if err != nil {
		return tools.Result{}, false, nil // the local run says what is wrong
	}
	var spec *repos.Spec
	for i := range specs {
		if specs[i].Name == t.repo || (t.repo == "" && len(specs) == 1) {
			spec = &specs[i]
		}
	}
	if spec == nil {
		return tools.Result{}, false, nil
	}
	callCtx, cancel := context.WithTimeout(ctx, handoffTimeout(cfg)+handoffSlack)
	defer cancel()
	resp, err := handoff.Call(callCtx, cfg.DataDir, handoff.Request{Key: toolKey(cfg, *spec, env), Tool: call.Name, Input: call.Input}, say)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, false, ctx.Err()
		}
		log.Debug("running the call here", "reason", err.Error())
		return tools.Result{}, false, nil
	}
	return tools.Result{Content: resp.Content, Summary: resp.Summary, IsError: resp.IsError}, true, nil
}
