package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
)

// run is the state of one turn.
type run struct {
	a   *Agent
	obs Observer
	// conv is the system prompt, the history and what this turn appended.
	// It only grows; each request sends a capacity-capped view of it, so
	// no request can see a later change of an earlier one's messages.
	conv     []llm.Message
	start    int // index in conv of the turn's first message
	reported int // conv[:reported] has been handed to the caller
	usage    llm.Usage
	step     int
	rep      repeats
	turn     Turn
	began    time.Time
	// wire, when set, is the compacted form of conv[:wireFrom] that
	// requests send in its place (see Config.Compact).
	wire     []llm.Message
	wireFrom int
}

func (a *Agent) newRun(history []llm.Message, obs Observer) *run {
	if obs == nil {
		obs = nopObserver{}
	}
	conv := make([]llm.Message, 0, 1+len(history)+16)
	conv = append(conv, a.system)
	conv = append(conv, history...)
	return &run{
		a:     a,
		obs:   obs,
		conv:  conv,
		start: len(conv),
		rep:   repeats{max: a.maxRepeats},
		began: time.Now(),
	}
}

func (r *run) loop(ctx context.Context) (Turn, error) {
	nudged := false
	stuck := 0
	for {
		if err := ctx.Err(); err != nil {
			return r.end(fmt.Errorf("agent: before step %d: %w", r.step+1, err))
		}
		if r.step >= r.a.maxSteps {
			r.turn.HitMaxSteps = true
			return r.finish(ctx, maxStepsNote(r.a.maxSteps), maxStepsMark(r.a.maxSteps), ErrMaxSteps)
		}
		if stuck >= stuckSteps {
			r.turn.Repeating = true
			return r.finish(ctx, repeatingNote, repeatingMark, ErrRepeating)
		}
		msg, err := r.request(ctx, r.a.specs)
		if err != nil {
			return r.end(err)
		}
		if len(msg.ToolCalls) == 0 {
			if strings.TrimSpace(msg.Content) == "" {
				// Seen with thinking models that spend the reply on
				// reasoning. The empty reply is not kept: some providers
				// reject an assistant message without content.
				if nudged {
					return r.end(fmt.Errorf("agent: step %d: %w", r.step, ErrEmptyAnswer))
				}
				nudged = true
				r.conv = append(r.conv, llm.Message{Role: llm.RoleUser, Content: emptyAnswerNote})
				continue
			}
			r.conv = append(r.conv, msg)
			r.stepDone(r.step)
			r.turn.Answer = strings.TrimSpace(msg.Content)
			return r.end(nil)
		}

		step := r.step
		msg.ToolCalls = withIDs(msg.ToolCalls, step)
		r.conv = append(r.conv, msg)
		calls := make([]tools.Call, len(msg.ToolCalls))
		run := make([]bool, len(calls))
		allRefused := true
		for i, c := range msg.ToolCalls {
			calls[i] = tools.Call{ID: c.ID, Name: c.Name, Input: []byte(c.Arguments)}
			run[i] = r.rep.allow(c.Name, calls[i].Input)
			allRefused = allRefused && !run[i]
		}
		r.turn.ToolCalls += len(calls)
		r.runStep(ctx, step, calls, run)
		r.stepDone(step)
		if err := ctx.Err(); err != nil {
			return r.end(fmt.Errorf("agent: step %d: %w", step, err))
		}
		if allRefused {
			stuck++
		} else {
			stuck = 0
		}
	}
}

// finish makes the last request, without tools, after the loop was stopped:
// the person still gets the best answer the model can give from what it has
// found, marked as possibly incomplete.
func (r *run) finish(ctx context.Context, note, mark string, sentinel error) (Turn, error) {
	r.conv = append(r.conv, llm.Message{Role: llm.RoleUser, Content: note})
	msg, err := r.request(ctx, nil)
	if err != nil {
		return r.end(fmt.Errorf("agent: %w: %w", sentinel, err))
	}
	// Tool calls now would need results and another request; the text is
	// what the model has to say.
	msg.ToolCalls = nil
	text := strings.TrimSpace(msg.Content)
	if text == "" {
		text = noAnswerFallback
		msg.Content = text
	}
	r.conv = append(r.conv, msg)
	r.stepDone(r.step)
	r.turn.Answer = text + "\n\n" + mark
	return r.end(nil)
}

// request sends the conversation so far and accounts for the reply.
func (r *run) request(ctx context.Context, specs []llm.ToolSpec) (llm.Message, error) {
	r.step++
	r.turn.Steps++
	msgs := r.wireMessages(specs)
	resp, err := r.a.model.Complete(ctx, llm.Request{Messages: msgs, Tools: specs})
	if apiErr, ok := errors.AsType[*llm.APIError](err); ok {
		r.turn.Retries += max(apiErr.Attempts-1, 0)
	}
	if err != nil {
		return llm.Message{}, fmt.Errorf("agent: step %d: model request: %w", r.step, err)
	}
	r.turn.Retries += max(resp.Attempts-1, 0)
	r.turn.Usage = r.turn.Usage.Add(resp.Usage)
	r.turn.LastPromptTokens = resp.Usage.PromptTokens
	r.usage = r.usage.Add(resp.Usage)
	msg := resp.Message
	msg.Role = llm.RoleAssistant
	r.a.log.Debug("model replied", "step", r.step, "tool_calls", len(msg.ToolCalls),
		"prompt_tokens", resp.Usage.PromptTokens, "cached_tokens", resp.Usage.CachedPromptTokens,
		"completion_tokens", resp.Usage.CompletionTokens, "finish_reason", resp.FinishReason)
	return msg, nil
}

// wireMessages is what the next request sends: conv, or the compacted prefix
// and what came after it, compacted anew if Config.Compact says so.
func (r *run) wireMessages(specs []llm.ToolSpec) []llm.Message {
	n := len(r.conv)
	msgs := r.conv[:n:n]
	if r.wire != nil {
		msgs = slices.Concat(r.wire, r.conv[r.wireFrom:n])
	}
	if r.a.compact == nil {
		return msgs
	}
	tools := specs
	if tools == nil {
		// The final request without tools is sized as if they were
		// sent, so it does not compact where the others would not.
		tools = r.a.specs
	}
	if c, changed := r.a.compact(msgs, tools); changed {
		r.a.log.Info("compacted a turn's request", "step", r.step, "messages_before", len(msgs), "messages_after", len(c))
		r.wire, r.wireFrom = slices.Clip(c), n
		return r.wire
	}
	return msgs
}

// stepDone hands the messages appended since the last report, and the usage
// of the requests since then, to the observer.
func (r *run) stepDone(step int) {
	msgs := slices.Clone(r.conv[r.reported:])
	r.reported = len(r.conv)
	usage := r.usage
	r.usage = llm.Usage{}
	r.obs.StepDone(step, msgs, usage)
}

func (r *run) end(err error) (Turn, error) {
	r.turn.Appended = slices.Clone(r.conv[r.start:r.reported])
	// Debug: the adapter running the turn (Slack, the terminal) logs the
	// one summary line per answer, with what only it knows (thread,
	// repository, outcome).
	level := slog.LevelDebug
	attrs := []any{
		"steps", r.turn.Steps, "tool_calls", r.turn.ToolCalls,
		"prompt_tokens", r.turn.Usage.PromptTokens, "cached_tokens", r.turn.Usage.CachedPromptTokens,
		"completion_tokens", r.turn.Usage.CompletionTokens, "last_prompt_tokens", r.turn.LastPromptTokens,
		"duration", time.Since(r.began),
	}
	if r.turn.HitMaxSteps {
		attrs = append(attrs, "hit_max_steps", true)
	}
	if r.turn.Repeating {
		attrs = append(attrs, "repeating", true)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	r.a.log.Log(context.Background(), level, "turn done", attrs...)
	return r.turn, err
}
