package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/config"
)

// States of a server, as /healthz shows them.
const (
	StateIdle     = "idle"     // not needed yet
	StateStarting = "starting" // connecting and listing its tools
	StateReady    = "ready"    // connected, its tools listed
	StateDown     = "down"     // it failed to start, died or hung; restarting after a pause
)

// upstream is one configured MCP server and the goroutine that keeps it
// connected: it connects, lists the tools, waits until the connection
// ends (the process exited, or a failed call's check closed it), and
// connects again after a pause that doubles with each failure in a row.
type upstream struct {
	spec config.MCPServer
	cred credentials
	opts *ClientOptions
	log  *slog.Logger

	start     sync.Once
	firstDone chan struct{} // closed once the first attempt has ended

	// proc is the stdio server's process of the current attempt; only
	// run's goroutine touches it.
	proc *exec.Cmd

	// oversize is set when a response was cut at the limit, until the
	// failed call reads it.
	oversize atomic.Bool

	mu       sync.Mutex
	state    string
	cs       *sdk.ClientSession
	tools    []*remoteTool // the last listing's, kept while it restarts
	lastErr  string
	since    time.Time
	restarts int
	checking bool
}

func newUpstream(spec config.MCPServer, opts *ClientOptions) *upstream {
	return &upstream{
		spec:      spec,
		cred:      resolveCredentials(spec, opts.Env),
		opts:      opts,
		log:       opts.Logger.With("mcp_server", spec.Name),
		firstDone: make(chan struct{}),
		state:     StateIdle,
		since:     opts.now(),
	}
}

// run keeps the server connected until ctx ends.
func (s *upstream) run(ctx context.Context, done func()) {
	defer done()
	defer s.signalFirst() // a turn waiting for the first attempt stops waiting
	pause := s.opts.MinBackoff
	for {
		s.set(StateStarting, nil)
		began := s.opts.now()
		cs, err := s.connect(ctx)
		s.signalFirst()
		if err == nil {
			s.log.Info("MCP server ready", "tools", len(s.offeredTools()))
			err = s.serve(ctx, cs)
			if s.opts.now().Sub(began) > s.opts.MaxBackoff {
				pause = s.opts.MinBackoff // it was up a good while: not a crash loop
			}
		}
		s.endProc()
		if ctx.Err() != nil {
			s.set(StateDown, errors.New("stopped"))
			return
		}
		s.set(StateDown, err)
		s.log.Warn("MCP server down; restarting after a pause", "err", s.cred.line(err.Error()), "pause", pause.String())
		select {
		case <-ctx.Done():
			return
		case <-s.opts.pause(pause):
		}
		pause = min(pause*2, s.opts.MaxBackoff)
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

func (s *upstream) signalFirst() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.firstDone:
	default:
		close(s.firstDone)
	}
}

// connect starts or reaches the server and lists its tools, within the
// start timeout.
func (s *upstream) connect(ctx context.Context) (*sdk.ClientSession, error) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "askrepo", Version: s.opts.Version}, nil)
	cs, err := client.Connect(cctx, s.transport(), nil)
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer to the MCP handshake within %s", s.opts.StartTimeout)
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	var listed []*sdk.Tool
	for t, err := range cs.Tools(cctx, nil) {
		if err != nil {
			_ = cs.Close()
			return nil, fmt.Errorf("list its tools: %w", err)
		}
		if len(listed) >= 4*maxToolsPerServer {
			break
		}
		listed = append(listed, t)
	}
	tools := pickTools(s, listed, s.log)
	s.mu.Lock()
	s.cs, s.tools = cs, tools
	s.mu.Unlock()
	s.set(StateReady, nil)
	return cs, nil
}

// transport is how the server is reached: a process over stdio, or its
// streamable HTTP endpoint with its headers.
func (s *upstream) transport() sdk.Transport {
	if s.spec.Command != "" {
		cmd := exec.Command(s.spec.Command, s.spec.Args...)
		cmd.Env = s.cred.childEnv()
		cmd.Stderr = &stderrLog{log: s.log, cred: s.cred}
		ownGroup(cmd)
		s.proc = cmd
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	return &sdk.StreamableClientTransport{
		Endpoint: s.spec.URL,
		HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: s.cred.headers,
			limit: s.opts.maxResponse, over: s.overLimit}, CheckRedirect: sameOrigin},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}
}

// endProc ends what is left of the attempt's stdio server: the processes
// it started, which closing its connection does not reach.
func (s *upstream) endProc() {
	if s.proc != nil {
		endGroup(s.proc)
		s.proc = nil
	}
}

// serve waits until the connection ends: the server exited or closed it,
// a failed call's check found it unresponsive, or ctx ended.
func (s *upstream) serve(ctx context.Context, cs *sdk.ClientSession) error {
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	var err error
	select {
	case err = <-ended:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	s.cs = nil
	s.mu.Unlock()
	_ = cs.Close()
	if err == nil {
		err = errors.New("the connection ended")
	}
	return fmt.Errorf("stopped: %w", err)
}

// session is the live connection, or an error for the model saying the
// server is not available now.
func (s *upstream) session() (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != nil {
		return s.cs, nil
	}
	return nil, fmt.Errorf("the %s server is not available right now (%s); it is restarted by itself: go on without it, or try again later", s.spec.Name, s.state)
}

// suspect checks, after a call failed or timed out, that the server still
// answers a ping; one that does not is closed, so run restarts it. A tool
// that is only slow leaves a server that answers pings alone.
func (s *upstream) suspect() {
	s.mu.Lock()
	cs := s.cs
	if cs == nil || s.checking {
		s.mu.Unlock()
		return
	}
	s.checking = true
	s.mu.Unlock()
	go func() {
		defer func() { s.mu.Lock(); s.checking = false; s.mu.Unlock() }()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.PingTimeout)
		defer cancel()
		if err := cs.Ping(ctx, nil); err != nil {
			s.log.Warn("MCP server does not answer a ping after a failed call; restarting it", "err", s.cred.line(err.Error()))
			_ = cs.Close()
		}
	}()
}

func (s *upstream) set(state string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != state {
		s.since = s.opts.now()
	}
	s.state = state
	if err != nil {
		s.lastErr = s.cred.line(err.Error())
	}
}

func (s *upstream) offeredTools() []*remoteTool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// stderrLines is how many lines of one process's stderr are logged; a
// server that writes more is chattering, not explaining.
const stderrLines = 100

// stderrLog logs what a stdio server writes to stderr, one line at a time
// and scrubbed: it is often the only word on why a server will not start.
type stderrLog struct {
	log   *slog.Logger
	cred  credentials
	mu    sync.Mutex
	buf   []byte
	lines int
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) > 4096 {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *stderrLog) emit(line []byte) {
	s := w.cred.line(string(line))
	if s == "" || w.lines > stderrLines {
		return
	}
	w.lines++
	if w.lines > stderrLines {
		w.log.Info("MCP server stderr: further lines of this process are not logged", "logged", stderrLines)
		return
	}
	w.log.Info("MCP server stderr", "line", s)
}

// overLimit marks a response cut at ClientOptions' limit, for the call
// that fails of it to say why.
func (s *upstream) overLimit() {
	s.oversize.Store(true)
	s.log.Warn("MCP server response over the limit; not read on", "limit", s.opts.maxResponse)
}
