package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ErrRefused is Call's answer when the service would not run the call; the
// error says why.
var ErrRefused = errors.New("the service did not run the call")

// maxResponse bounds a response: a tool's result is capped far below it.
const maxResponse = 16 << 20

// dialTimeout bounds connecting: a live service accepts at once.
const dialTimeout = time.Second

// answerWait bounds the wait for the service's first answer (Accepted, or
// a refusal): a live one sends it within milliseconds, but a stopped
// (SIGSTOP, Ctrl-Z) or wedged one still completes connections into its
// socket's backlog, and its caller would otherwise wait forever.
var answerWait = 2 * ioTimeout

// Call hands req to the service listening on dataDir and returns its
// result, passing each line of progress to progress (nil: dropped) as it
// comes. Any error means the call was not run there (ErrNoService,
// ErrRefused, ErrStranger, or a broken connection) and the caller should
// run it itself; only ctx's end is worth reporting as such.
func Call(ctx context.Context, dataDir string, req Request, progress func(string)) (Response, error) {
	path := Path(dataDir)
	if !supported || len(path) > maxPath {
		return Response{}, ErrNoService
	}
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrNoService, err)
	}
	c := conn.(*net.UnixConn)
	defer c.Close()
	if err := checkPeer(c); err != nil {
		return Response{}, err
	}
	_ = c.SetDeadline(time.Now().Add(answerWait))
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return Response{}, fmt.Errorf("send the call: %w", cmpCtx(ctx, err))
	}
	dec := json.NewDecoder(io.LimitReader(c, maxResponse))
	var resp Response
	for first := true; ; first = false {
		resp = Response{}
		if err := dec.Decode(&resp); err != nil {
			return Response{}, fmt.Errorf("read the result: %w", cmpCtx(ctx, err))
		}
		if first {
			// The service is alive and took the call; from here its own
			// timeout bounds it. Cleared before ctx is looked at, so
			// a cancel in between still cuts the connection.
			_ = c.SetDeadline(time.Time{})
			if ctx.Err() != nil {
				return Response{}, ctx.Err()
			}
		}
		if resp.Accepted {
			continue
		}
		if resp.Progress == "" {
			break
		}
		if progress != nil {
			progress(resp.Progress)
		}
	}
	if resp.Refused != "" {
		return Response{}, fmt.Errorf("%w: %s", ErrRefused, resp.Refused)
	}
	return resp, nil
}

// cmpCtx is ctx's error when ctx ended (the deadline cut the connection),
// else err.
func cmpCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
