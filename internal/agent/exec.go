package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
)

// maxCallsPerStep bounds the tool calls of one step that run. A model
// (or a prompt injected into what it read) can ask for thousands in one
// reply; past this many each gets an error result telling it to spread
// them over steps, so every call is still answered.
const maxCallsPerStep = 32

// runStep runs the calls of one step and appends one tool message per call,
// in call order. Calls with run[i] false are refused repeats: they get an
// error result without running. Every call gets a result, also when ctx is
// cancelled, because providers reject a history with a call left unanswered.
func (r *run) runStep(ctx context.Context, step int, calls []tools.Call, run []bool) {
	results := make([]tools.Result, len(calls))
	for _, c := range calls {
		r.obs.ToolStarted(step, c)
	}
	run = slices.Clone(run)
	for i, c := range calls {
		switch {
		case i >= maxCallsPerStep:
			run[i] = false
			results[i] = tools.Result{
				CallID:  c.ID,
				Name:    c.Name,
				Content: fmt.Sprintf("not run: one step may call at most %d tools and this one asked for %d; call the ones you still need in the next step, fewer at a time", maxCallsPerStep, len(calls)),
				Summary: "too many calls in one step, not run",
				IsError: true,
			}
		case !run[i]:
			results[i] = tools.Result{
				CallID:  c.ID,
				Name:    c.Name,
				Content: repeatMessage(c.Name, r.a.maxRepeats),
				Summary: "repeated call, not run",
				IsError: true,
			}
		default:
			continue
		}
		r.obs.ToolDone(step, c, results[i], 0)
	}
	for i := 0; i < len(calls); {
		if !run[i] {
			i++
			continue
		}
		if !r.a.readOnly(calls[i].Name) {
			results[i] = r.exec(ctx, step, calls[i])
			i++
			continue
		}
		j := i + 1
		for j < len(calls) && (!run[j] || r.a.readOnly(calls[j].Name)) {
			j++
		}
		r.execConcurrently(ctx, step, calls[i:j], run[i:j], results[i:j])
		i = j
	}
	for i, c := range calls {
		res := results[i]
		r.conv = append(r.conv, llm.Message{
			Role:       llm.RoleTool,
			Content:    res.Content,
			ToolCallID: c.ID,
			IsError:    res.IsError,
		})
	}
}

// execConcurrently runs the calls with run[i] set, at most maxParallel at a
// time, writing each result to its own slot so the order is the calls'.
func (r *run) execConcurrently(ctx context.Context, step int, calls []tools.Call, run []bool, results []tools.Result) {
	n := 0
	for _, ok := range run {
		if ok {
			n++
		}
	}
	if n == 1 {
		for i, ok := range run {
			if ok {
				results[i] = r.exec(ctx, step, calls[i])
			}
		}
		return
	}
	sem := make(chan struct{}, r.a.maxParallel)
	var wg sync.WaitGroup
	for i, c := range calls {
		if !run[i] {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[i] = cancelledResult(c)
			r.obs.ToolDone(step, c, results[i], 0)
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = r.exec(ctx, step, c)
		})
	}
	wg.Wait()
}

// exec runs one call under the per-call timeout and tells the observer.
func (r *run) exec(ctx context.Context, step int, c tools.Call) tools.Result {
	began := time.Now()
	res := r.a.runOne(ctx, c)
	took := time.Since(began)
	res.CallID = c.ID
	if res.Name == "" {
		res.Name = c.Name
	}
	r.a.log.Debug("tool done", "step", step, "tool", c.Name, "summary", res.Summary, "is_error", res.IsError, "took", took)
	r.obs.ToolDone(step, c, res, took)
	return res
}

// runOne runs the call in its own goroutine under the per-call timeout.
// When the timeout or ctx ends first, it waits up to stopGrace for the tool
// to return: tools stop promptly when their context ends, so the call's work
// is over when the call is, and a partial result that arrives in that time
// (a search that says what it did not cover) is kept. A tool that ignores
// its context is a bug; it is logged and left behind, so it cannot hold the
// turn. Any error result after the timeout is replaced by one that tells the
// model what happened and what to do.
func (a *Agent) runOne(ctx context.Context, c tools.Call) tools.Result {
	if ctx.Err() != nil {
		return cancelledResult(c)
	}
	cctx, cancel := context.WithTimeout(ctx, a.toolTimeout)
	defer cancel()
	done := make(chan tools.Result, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				a.log.Error("tool panicked", "tool", c.Name, "panic", fmt.Sprint(v))
				done <- tools.Result{
					Name:    c.Name,
					Content: "the tool failed with an internal error; try other arguments or another tool",
					Summary: "internal error",
					IsError: true,
				}
			}
		}()
		done <- a.tools.Run(cctx, c)
	}()
	var res tools.Result
	select {
	case res = <-done:
		if !res.IsError || cctx.Err() == nil {
			return res
		}
	case <-cctx.Done():
		grace := time.NewTimer(a.stopGrace)
		defer grace.Stop()
		select {
		case res = <-done:
			if !res.IsError {
				return res
			}
		case <-grace.C:
			a.log.Error("tool still running after its call ended; its goroutine is left behind", "tool", c.Name, "grace", a.stopGrace.String())
		}
	}
	if ctx.Err() != nil {
		return cancelledResult(c)
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return tools.Result{
			Name:    c.Name,
			Content: fmt.Sprintf("timed out after %s; narrow the request (a smaller directory, a more specific pattern, fewer lines)", a.toolTimeout),
			Summary: fmt.Sprintf("timed out after %s", a.toolTimeout),
			IsError: true,
		}
	}
	return res
}

func cancelledResult(c tools.Call) tools.Result {
	return tools.Result{
		CallID:  c.ID,
		Name:    c.Name,
		Content: "cancelled: the turn was stopped before this call finished",
		Summary: "cancelled",
		IsError: true,
	}
}
