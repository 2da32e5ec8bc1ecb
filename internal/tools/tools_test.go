package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// runText runs tool and returns the text the model reads, for the tests
// that look at nothing else.
func runText(ctx context.Context, tool Tool, input json.RawMessage) (string, error) {
	out, err := tool.Run(ctx, input)
	return out.Text, err
}

// toolCase is one call of a tool and what must come of it. What is
// checked is the output, or the error's text when the call failed.
type toolCase struct {
	name     string
	args     any      // the arguments: JSON text as a string, or a value to marshal
	want     string   // all of it; "" checks nothing
	contains []string // parts of it
	absent   []string // what it must not hold
	summary  string   // the tool's Summarize of the output; "" checks nothing
	wantErr  bool     // the call fails
	is       error    // the error wraps this
}

// checkTool runs each case through tool; absent is kept out of every
// case's output.
func checkTool(t *testing.T, tool Tool, cases []toolCase, absent ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runText(t.Context(), tool, toolInput(t, tc.args))
			got := out
			if err != nil {
				got = err.Error()
			}
			if (err != nil) != (tc.wantErr || tc.is != nil) {
				t.Fatalf("error = %v, want one: %v; output:\n%s", err, tc.wantErr || tc.is != nil, out)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error = %v, want %v", err, tc.is)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(got, s) {
					t.Errorf("output lacks %q:\n%.300s\n…\n%s", s, got, got[max(0, len(got)-300):])
				}
			}
			for _, s := range append(tc.absent, absent...) {
				if strings.Contains(got, s) {
					t.Errorf("output has %q:\n%s", s, got)
				}
			}
			if tc.summary != "" {
				if s := tool.(Summarizer).Summarize(out); s != tc.summary {
					t.Errorf("summary = %q, want %q", s, tc.summary)
				}
			}
		})
	}
}

// toolInput is a case's arguments as the model sends them.
func toolInput(t testing.TB, args any) json.RawMessage {
	t.Helper()
	if s, ok := args.(string); ok {
		return json.RawMessage(s)
	}
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// wsOf is a workspace over a new directory that holds files.
func wsOf(t testing.TB, files map[string]string) *Workspace {
	t.Helper()
	dir := t.TempDir()
	wsWriteFiles(t, dir, files)
	return wsNew(t, dir, WorkspaceOptions{})
}

// withNumbered adds n empty files to files, named by format from the
// numbers 0 to n-1, for tests of what a tool does with many.
func withNumbered(files map[string]string, format string, n int) map[string]string {
	for i := range n {
		files[fmt.Sprintf(format, i)] = ""
	}
	return files
}
