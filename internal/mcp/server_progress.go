package mcp

import (
	"context"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/turn"
)

// progressTimeout bounds the sending of one progress notification: a
// client slow to read them must not hold up the turn.
const progressTimeout = time.Second

// observer is an ask's turn.Observer. It keeps the tool calls, in the order
// they ended, for the result; and when the client asked for progress (a
// progressToken in the call's _meta), it tells it of each call as it ends,
// one line as Slack's context lines say it ("read_file main.go:1-80: 80
// lines"), so a person watching the client sees the agent work.
type observer struct {
	ctx     context.Context
	session *sdk.ServerSession
	token   any // the client's progress token; nil: no notifications

	mu    sync.Mutex
	calls []turn.Call
}

var _ turn.Observer = (*observer)(nil)

func newObserver(ctx context.Context, req *sdk.CallToolRequest) *observer {
	o := &observer{ctx: ctx, session: req.Session}
	if req.Params != nil {
		o.token = req.Params.GetProgressToken()
	}
	return o
}

func (o *observer) ToolStarted(turn.Call) {}

// ToolDone keeps the call and sends its line, under the lock, so the
// progress count goes up in the order the lines go out.
func (o *observer) ToolDone(c turn.Call) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, c)
	if o.token == nil || o.session == nil {
		return
	}
	line := strings.TrimSpace(c.Name + " " + c.Brief)
	if c.Failed {
		line += " failed"
	}
	if c.Summary != "" {
		line += ": " + c.Summary
	}
	ctx, cancel := context.WithTimeout(o.ctx, progressTimeout)
	defer cancel()
	_ = o.session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: o.token, Message: line, Progress: float64(len(o.calls))})
}

func (o *observer) StepDone(turn.Step) {}

func (o *observer) list() []toolCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]toolCall, 0, len(o.calls))
	for _, c := range o.calls {
		out = append(out, toolCall{Name: c.Name, Args: c.Args, Summary: c.Summary, Failed: c.Failed, Link: c.Link})
	}
	return out
}
