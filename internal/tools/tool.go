// Package tools holds the read-only tools the model uses to look at a
// checkout, the registry that hands their definitions to the model and runs
// calls by name, and the Workspace that confines every file access to the
// checkout.
//
// It must not import any other internal package but the leaf gitexec, the one
// way git is run: the agent adapts these types to the model's.
package tools

import (
	"context"
	"encoding/json"
)

// Definition is all the model knows of a tool: its name, when to use it, and
// the JSON Schema of its parameters.
type Definition struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Tool is a definition for the model plus the code that runs. Run returns
// text already shaped for a model to read. On error, any output returned is
// partial output and is kept in front of the error message.
type Tool interface {
	Definition() Definition
	Run(ctx context.Context, input json.RawMessage) (string, error)
}

// Call is one request by the model to run a tool.
type Call struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Result is what a call produced. The registry always returns one, errors
// included. Content is what the model reads; Summary is one short line for
// people (a Slack context line, a terminal line), e.g. "120 lines" or
// "outside the workspace".
type Result struct {
	CallID  string
	Name    string
	Content string
	Summary string
	IsError bool
}

// Summarizer is implemented by tools that can say better than a line count
// what their output holds ("3 matches in 2 files"). The registry calls it
// with the complete output of a successful run, before truncation, to fill
// Result.Summary.
type Summarizer interface {
	Summarize(output string) string
}
