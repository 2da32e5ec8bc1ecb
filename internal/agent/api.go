// Package agent runs the loop: send the history and the tool definitions to
// the model, run the tools it asks for, append all their results, and repeat
// until it answers. It declares the small interfaces it needs (Model,
// Toolbox, Observer) and imports only llm and tools from the project:
// nothing that stores sessions, talks to Slack or prints to a terminal, so
// every front end runs the same loop.
package agent

import (
	"context"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
)

// Model completes a chat. *llm.Client and *llm.Demo satisfy it.
type Model interface {
	Complete(ctx context.Context, req llm.Request) (llm.Response, error)
}

// Toolbox lists tool definitions (sorted, stable) and runs calls; Run always
// returns a result. *tools.Registry satisfies it.
type Toolbox interface {
	Definitions() []tools.Definition
	Run(ctx context.Context, call tools.Call) tools.Result
}

// Observer is told what the loop does, so a terminal or a Slack thread can
// show it. Calls of one step may run concurrently: ToolStarted and ToolDone
// may be called from several goroutines at once, but ToolStarted for every
// call of a step happens (in call order) before any of them runs, and
// StepDone after all of them are done. Implementations must not block long.
type Observer interface {
	// ToolStarted is called before a call runs.
	ToolStarted(step int, call tools.Call)
	// ToolDone is called when it has returned.
	ToolDone(step int, call tools.Call, res tools.Result, took time.Duration)
	// StepDone is called after each completed step with the messages it
	// appended to the history (the assistant message and, on a tool turn,
	// one tool message per call in call order), so they can be persisted
	// as they happen.
	StepDone(step int, appended []llm.Message, usage llm.Usage)
}

// ReadOnlyReporter may be implemented by a Toolbox that holds tools with side
// effects. The calls of one step for which ReadOnly is true run concurrently;
// any other call runs alone, after the calls before it and before the calls
// after it. A Toolbox that does not implement it is taken to be all
// read-only, as askrepo's tools are.
type ReadOnlyReporter interface {
	ReadOnly(toolName string) bool
}
