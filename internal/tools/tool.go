// Package tools holds the read-only tools the model uses to look at a
// checkout, the registry that hands their definitions to the model, runs
// calls by name and gives their short forms and what they read for people,
// and the Workspace that confines every file access to the checkout.
//
// It must not import any other internal package but the leaves gitexec, the
// one way git is run, search, the engine behind search_code, symbols,
// which reads a file's definitions, and ctxio, which stops a file's read
// when its call ends: the agent adapts these types to the model's, and the
// front ends read Result.Refs and Registry.Describe rather than a tool's
// arguments or text.
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
// text already shaped for a model to read, and the references of what it
// read. On error, any text returned is partial output and is kept in front
// of the error message; its references are dropped.
//
// Every tool has the same anatomy: a file of its own with a name constant,
// an args struct, a description (desc/<name>.md), an exported type built by
// New<Tool>(ws *Workspace, opts Options), which reads only its own part of
// opts, and a Describe method (Describer) for the short form of its
// arguments. Default is the set the service runs.
type Tool interface {
	Definition() Definition
	Run(ctx context.Context, input json.RawMessage) (Output, error)
}

// Output is what one run of a tool produced: Text for the model, and Refs,
// what the text shows of the checkout, for people (a link on a context
// line). The tool that read something is the one that knows what it read,
// so nothing downstream decodes its arguments or parses its text for it.
type Output struct {
	Text string
	Refs []Ref
}

// Text is the Output of a tool run that read nothing worth linking.
func Text(s string) Output { return Output{Text: s} }

// Ref is one thing a tool call read: a file, some of its lines, or a
// directory, at the checkout's commit or at a commit of its history.
//
// What each tool reports:
//   - read_file: the file; Start and End are the first and last line shown
//     when it showed a page (an offset past 1, a limit, or a page it cut
//     short and says where to continue), else 0, 0 for the whole file.
//   - git_blame: the lines asked for, start to max(end, start) (0, 0 when
//     no start was given), with Commit the full commit blamed.
//   - list_files: the directory listed, Dir set, "." for the root.
//   - search_code: each file a shown match is in, Start = End = the line of
//     its first shown match, in the order shown.
//   - git_log: the path whose history was listed, if one was given, as it
//     is in the checkout; Dir when it is a directory.
//   - git_show: the path whose diff was shown, if one was given, with
//     Commit the full commit shown.
//   - glob: nothing; it lists names, which are not what it read, and may
//     list hundreds of them.
type Ref struct {
	// Path is slash-separated and relative to the workspace root; "."
	// is the root.
	Path string
	// Start and End are a 1-based inclusive line range; 0, 0 means the
	// whole file, or that lines do not apply.
	Start, End int
	// Dir is set when Path is a directory.
	Dir bool
	// Commit is the full commit the tool read Path at when it read
	// history rather than the checkout's files; "" means the checkout as
	// leased. A consumer linking at the lease's commit compares it with
	// that exactly.
	Commit string
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
// "outside the workspace"; Refs are what the tool read (see Ref), none
// when the call failed.
type Result struct {
	CallID  string
	Name    string
	Content string
	Summary string
	IsError bool
	Refs    []Ref
}

// Summarizer is implemented by tools that can say better than a line count
// what their output holds ("3 matches in 2 files"). The registry calls it
// with the complete output of a successful run, before truncation, to fill
// Result.Summary.
type Summarizer interface {
	Summarize(output string) string
}

// Describer is implemented by every tool: Describe gives the call's
// arguments in the short form a person reads on a context line, e.g.
// "a.go:10-80" or "\"retry\" in internal/ (*.go)". It may return anything
// for arguments that do not decode: Registry.Describe cuts its answer to
// one line and falls back to a generic form on invalid JSON.
type Describer interface {
	Describe(input json.RawMessage) string
}
