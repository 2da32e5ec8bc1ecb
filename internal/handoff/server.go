package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/flock"
)

// Handler runs one call. ctx ends when the call's time is up, the caller
// hangs up, or the server closes. progress sends the caller a line to show
// while it waits (Response.Progress); it must not be called once the
// handler has returned.
type Handler func(ctx context.Context, req Request, progress func(string)) Response

// Options tune a Server; the zero value is usable.
type Options struct {
	// MaxConcurrent bounds the calls run at once (default 4): one more is
	// refused as busy and its caller runs it itself, so a loop of bot tool
	// calls cannot crowd out the service's own turns.
	MaxConcurrent int
	// Timeout bounds one call, a wait for the code index included
	// (default 2 minutes).
	Timeout time.Duration
	Logger  *slog.Logger
}

// ErrInUse is Listen's answer when another live process already takes
// calls on the data directory.
var ErrInUse = errors.New("another process takes tool calls on this data directory")

// ioTimeout bounds reading a request and writing a response: both are one
// small JSON value on a local socket.
var ioTimeout = 5 * time.Second

// connsPerCall bounds the connections served at once, as a multiple of
// MaxConcurrent: a request is read before the call can be refused as busy,
// so without a bound of their own, clients that connect and send nothing
// (or a request slowly) would each hold a goroutine, a descriptor and up to
// maxRequest of buffer until ioTimeout. One past the bound is turned away
// as busy at once.
const connsPerCall = 8

// Server takes tool calls on a data directory's socket. Its methods are
// safe for concurrent use.
type Server struct {
	ln     *net.UnixListener
	lock   *os.File
	h      Handler
	opts   Options
	log    *slog.Logger
	sem    chan struct{}
	conns  chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	mu     sync.Mutex
	closed bool // no wg.Add once Close waits
}

// Listen makes the socket of dataDir and returns the server, which takes
// calls once Serve runs. It refuses (errors.ErrUnsupported) where the
// peer's user cannot be checked, and (ErrInUse) when another live process
// listens: the socket belongs to whoever holds Dir/tool.lock, and a socket
// left by a process that died is replaced.
func Listen(dataDir string, h Handler, opts Options) (*Server, error) {
	if !supported {
		return nil, fmt.Errorf("hand tool calls over a socket: %w", errors.ErrUnsupported)
	}
	path := Path(dataDir)
	if len(path) > maxPath {
		return nil, fmt.Errorf("the socket path %s is longer than a unix socket's %d bytes: use a shorter BOT_DATA_DIR", path, maxPath)
	}
	if err := steadyDir(dataDir); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	lock, err := openLock(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, err
	}
	if err := flock.TryLock(lock); err != nil {
		lock.Close()
		if errors.Is(err, flock.ErrLocked) {
			return nil, ErrInUse
		}
		return nil, fmt.Errorf("lock the socket: %w", err)
	}
	// Holding the lock, whatever is at path is a dead process's.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		lock.Close()
		return nil, fmt.Errorf("remove a stale socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("listen on the socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		lock.Close()
		return nil, fmt.Errorf("restrict the socket: %w", err)
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 4
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{ln: ln, lock: lock, h: h, opts: opts, log: log, sem: make(chan struct{}, opts.MaxConcurrent), conns: make(chan struct{}, connsPerCall*opts.MaxConcurrent), ctx: ctx, cancel: cancel}, nil
}

// Addr is the socket's path.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve takes calls until Close; it returns nil then.
func (s *Server) Serve() error {
	backoff := 5 * time.Millisecond
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			// EMFILE and the like pass; anything else after a moment too.
			s.log.Warn("accept a tool call", "err", err)
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		select {
		case s.conns <- struct{}{}:
		default:
			s.turnAway(c)
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// turnAway tells a connection past the bound to run its call itself, with
// one small write into a fresh socket's buffer that cannot block the
// accept loop, and closes it. A stranger learns nothing from it.
func (s *Server) turnAway(c *net.UnixConn) {
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
	_ = json.NewEncoder(c).Encode(Response{Refused: "busy: run it yourself"})
	c.Close()
}

// Close stops taking calls, cancels the running ones, waits for them,
// removes the socket and lets the lock go.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.cancel()
		s.ln.Close() // removes the socket: it was made by Listen
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.wg.Wait()
		s.lock.Close()
	})
	return nil
}

func (s *Server) serveConn(c *net.UnixConn) {
	defer s.wg.Done()
	defer func() { <-s.conns }()
	defer c.Close()
	// Close cuts every connection's reads and writes at once: a client
	// that sends nothing, or reads nothing, must not hold bot serve's stop.
	defer context.AfterFunc(s.ctx, func() { _ = c.SetDeadline(time.Now()) })()
	if err := checkPeer(c); err != nil {
		s.log.Warn("refused a connection to the tool socket", "err", err)
		return
	}
	s.deadline(c.SetReadDeadline)
	var req Request
	if err := json.NewDecoder(io.LimitReader(c, maxRequest)).Decode(&req); err != nil {
		s.reply(c, Response{Refused: fmt.Sprintf("not a tool call: %v", err)})
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	default:
		s.reply(c, Response{Refused: "busy: run it yourself"})
		return
	}
	s.reply(c, Response{Accepted: true})
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.Timeout)
	defer cancel()
	// The caller sends nothing more: a read that returns means it hung up
	// (or broke the protocol), and the call is not worth finishing.
	go func() {
		var b [1]byte
		_, _ = c.Read(b[:])
		cancel()
	}()
	s.reply(c, s.run(ctx, req, func(line string) {
		if line != "" {
			s.reply(c, Response{Progress: line})
		}
	}))
}

// run runs the handler, turning a panic into a refusal: the caller then
// runs the call itself, and the service goes on.
func (s *Server) run(ctx context.Context, req Request, progress func(string)) (resp Response) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("a handed-over tool call panicked", "tool", req.Tool, "panic", p)
			resp = Response{Refused: "the service failed on this call"}
		}
	}()
	return s.h(ctx, req, progress)
}

// deadline sets a deadline ioTimeout away with set, or now once the server
// closes. Set before the server's end is looked at: Close's own cut
// (serveConn's AfterFunc) runs after its end shows, so it cannot be undone.
func (s *Server) deadline(set func(time.Time) error) {
	_ = set(time.Now().Add(ioTimeout))
	if s.ctx.Err() != nil {
		_ = set(time.Now())
	}
}

func (s *Server) reply(c *net.UnixConn, resp Response) {
	s.deadline(c.SetWriteDeadline)
	if err := json.NewEncoder(c).Encode(resp); err != nil {
		s.log.Debug("answer a tool call", "err", err)
	}
}
