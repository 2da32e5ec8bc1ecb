package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeTool runs fn; it lets each registry case script one behaviour. Its
// output reports refs.
type fakeTool struct {
	name string
	fn   func(ctx context.Context, input json.RawMessage) (string, error)
	refs []Ref
}

func (f fakeTool) Definition() Definition {
	return Definition{Name: f.name, Description: "test tool " + f.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (f fakeTool) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	out, err := f.fn(ctx, input)
	return Output{Text: out, Refs: f.refs}, err
}

type summarizingTool struct{ fakeTool }

func (summarizingTool) Summarize(output string) string { return "custom: " + output }

func constTool(name, out string, err error) fakeTool {
	return fakeTool{name: name, fn: func(context.Context, json.RawMessage) (string, error) { return out, err }}
}

func TestRegistryDefinitionsSorted(t *testing.T) {
	r := NewRegistry(constTool("read_file", "", nil), constTool("glob", "", nil), constTool("list_files", "", nil))
	var got []string
	for _, d := range r.Definitions() {
		got = append(got, d.Name)
	}
	want := []string{"glob", "list_files", "read_file"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Definitions order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestRegistryDuplicateNamePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("two tools with one name were accepted")
		}
	}()
	NewRegistry(constTool("a", "", nil), constTool("a", "", nil))
}

func TestRegistryRun(t *testing.T) {
	long := strings.Repeat("head line\n", 200) + strings.Repeat("middle\n", 2000) + strings.Repeat("tail line\n", 200)
	tests := []struct {
		name        string
		tool        Tool
		call        string
		wantContent string // exact, unless contains is set
		contains    []string
		wantSummary string
		wantError   bool
	}{
		{
			name:        "plain output",
			tool:        constTool("t", "a\nb\n", nil),
			wantContent: "a\nb\n",
			wantSummary: "2 lines",
		},
		{
			name:        "empty output",
			tool:        constTool("t", "", nil),
			wantContent: "(no output)",
			wantSummary: "no output",
		},
		{
			name:        "unknown tool lists the tools",
			tool:        constTool("t", "", nil),
			call:        "readfile",
			wantContent: `unknown tool "readfile"; the available tools are: t`,
			wantSummary: "unknown tool",
			wantError:   true,
		},
		{
			name:        "error keeps partial output in front",
			tool:        constTool("t", "partial\n", errors.New("disk on fire\nsecond line")),
			wantContent: "partial\n\ndisk on fire\nsecond line",
			wantSummary: "disk on fire",
			wantError:   true,
		},
		{
			name:        "error without output",
			tool:        constTool("t", "", errors.New("bad")),
			wantContent: "bad",
			wantSummary: "bad",
			wantError:   true,
		},
		{
			name:        "outside summary hides the path",
			tool:        constTool("t", "", fmt.Errorf("%w: \"/home/me/secret\"", ErrOutside)),
			contains:    []string{"/home/me/secret"},
			wantSummary: "outside the workspace",
			wantError:   true,
		},
		{
			name:        "denied summary",
			tool:        constTool("t", "", fmt.Errorf("%w: x", ErrDenied)),
			contains:    []string{"x"},
			wantSummary: ErrDenied.Error(),
			wantError:   true,
		},
		{
			name: "panic becomes an error result",
			tool: fakeTool{name: "t", fn: func(context.Context, json.RawMessage) (string, error) {
				var m map[string]int
				m["x"] = 1
				return "", nil
			}},
			contains:    []string{"failed unexpectedly", "assignment to entry in nil map"},
			wantSummary: "internal error",
			wantError:   true,
		},
		{
			name:        "long summary line is cut",
			tool:        constTool("t", "", errors.New(strings.Repeat("é", 200))),
			contains:    []string{strings.Repeat("é", 200)},
			wantSummary: strings.Repeat("é", 79) + "…",
			wantError:   true,
		},
		{
			name:        "summarizer is used",
			tool:        summarizingTool{constTool("t", "x", nil)},
			wantContent: "x",
			wantSummary: "custom: x",
		},
		{
			name:        "long output keeps head and tail",
			tool:        constTool("t", long, nil),
			contains:    []string{"head line\nhead line\n", "tail line\ntail line\n", "… [cut: lines ", " limit of a result; ask for less at a time to see them] …"},
			wantSummary: "2400 lines",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistryWith(RegistryOptions{OutputLimit: 4096}, tt.tool)
			name := tt.call
			if name == "" {
				name = "t"
			}
			res := r.Run(t.Context(), Call{ID: "call_1", Name: name, Input: json.RawMessage(`{}`)})
			if res.CallID != "call_1" || res.Name != name {
				t.Errorf("result names call %q/%q, want call_1/%s", res.CallID, res.Name, name)
			}
			if res.IsError != tt.wantError {
				t.Errorf("IsError = %v, want %v", res.IsError, tt.wantError)
			}
			if res.Summary != tt.wantSummary {
				t.Errorf("Summary = %q, want %q", res.Summary, tt.wantSummary)
			}
			if tt.contains == nil && res.Content != tt.wantContent {
				t.Errorf("Content = %q, want %q", res.Content, tt.wantContent)
			}
			for _, c := range tt.contains {
				if !strings.Contains(res.Content, c) {
					t.Errorf("Content lacks %q:\n%s", c, res.Content)
				}
			}
			if len(res.Content) > 4096+100 {
				t.Errorf("Content is %d bytes, over the 4096 limit", len(res.Content))
			}
		})
	}
}

func TestTruncateOutput(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"lines", strings.Repeat("0123456789\n", 1000)},
		{"one huge line", strings.Repeat("x", 20000)},
		{"multibyte", strings.Repeat("日本語のテキスト", 2000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncateOutput(tt.in, 1000)
			if len(got) > 1100 {
				t.Errorf("%d bytes, want about 1000", len(got))
			}
			if !strings.Contains(got, " over the 1000 bytes limit of a result; ask for less at a time to see them] …\n") {
				t.Errorf("no truncation note:\n%s", got)
			}
			if !strings.HasPrefix(tt.in, got[:100]) || !strings.HasSuffix(tt.in, got[len(got)-100:]) {
				t.Error("head or tail not kept")
			}
			if !strings.Contains(got, "\n… [") {
				t.Error("note does not start on its own line")
			}
			for _, r := range got {
				if r == '\uFFFD' {
					t.Fatal("cut inside a UTF-8 sequence")
				}
			}
		})
	}
	if s := "short"; truncateOutput(s, 1000) != s {
		t.Error("short output changed")
	}
}

// The note names exactly the lines that are missing: the head, those
// lines, and the tail make up the whole output again.
func TestTruncateOutputSaysWhatWasCut(t *testing.T) {
	var in strings.Builder
	for i := 1; i <= 1717; i++ {
		fmt.Fprintf(&in, "line %04d\n", i)
	}
	got := truncateOutput(in.String(), 2000)
	head, rest, ok := strings.Cut(got, "… [cut: lines ")
	if !ok {
		t.Fatalf("no note:\n%s", got)
	}
	var first, last, from, to, total, size int
	if _, err := fmt.Sscanf(rest, "%d–%d (bytes %d–%d) of this output's %d lines / %d bytes", &first, &last, &from, &to, &total, &size); err != nil {
		t.Fatalf("note %q: %v", rest[:120], err)
	}
	_, tail, _ := strings.Cut(rest, "] …\n")
	var rebuilt strings.Builder
	rebuilt.WriteString(head)
	for i := first; i <= last; i++ {
		fmt.Fprintf(&rebuilt, "line %04d\n", i)
	}
	rebuilt.WriteString(tail)
	if rebuilt.String() != in.String() {
		t.Errorf("head + lines %d–%d + tail is not the output", first, last)
	}
	if total != 1717 || size != in.Len() || from != len(head)+1 || to != in.Len()-len(tail) {
		t.Errorf("note says %d lines / %d bytes, bytes %d–%d; want 1717 / %d, %d–%d", total, size, from, to, in.Len(), len(head)+1, in.Len()-len(tail))
	}
}

func TestParseArgs(t *testing.T) {
	type args struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Deep   bool   `json:"deep"`
	}
	tests := []struct {
		name    string
		in      string
		want    args
		wantErr string
	}{
		{"empty means {}", "", args{}, ""},
		{"whitespace means {}", "  \n", args{}, ""},
		{"null", "null", args{}, ""},
		{"fields", `{"path":"a","offset":3,"deep":true}`, args{"a", 3, true}, ""},
		{"unknown fields ignored", `{"path":"a","verbose":1}`, args{Path: "a"}, ""},
		{"invalid json", `{"path":`, args{}, `arguments are not valid JSON or have the wrong type: unexpected end of JSON input (at byte 8); expected {"path": string, "offset": integer, "deep": boolean}`},
		{"wrong type", `{"offset":"10"}`, args{}, `arguments are not valid JSON or have the wrong type: "offset" must be integer, not string; expected {"path": string, "offset": integer, "deep": boolean}`},
		{"not an object", `["a"]`, args{}, `arguments are not valid JSON or have the wrong type: cannot unmarshal array into Go value of type tools.args; expected {"path": string, "offset": integer, "deep": boolean}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArgs[args](json.RawMessage(tt.in))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v\nwant    %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The registry passes on what a tool read, and nothing of a call that
// failed: its partial output is not a page a person can be sent to.
func TestRegistryRefs(t *testing.T) {
	refs := []Ref{{Path: "a.go", Start: 1, End: 2}}
	ok := fakeTool{name: "ok", fn: func(context.Context, json.RawMessage) (string, error) { return "1\ta\n2\tb\n", nil }, refs: refs}
	failed := fakeTool{name: "failed", fn: func(context.Context, json.RawMessage) (string, error) { return "1\ta\n", errors.New("cut short") }, refs: refs}
	r := NewRegistry(ok, failed)
	if got := r.Run(t.Context(), Call{Name: "ok"}).Refs; !cmp.Equal(got, refs) {
		t.Errorf("refs of a good call = %v, want %v", got, refs)
	}
	if got := r.Run(t.Context(), Call{Name: "failed"}).Refs; got != nil {
		t.Errorf("refs of a failed call = %v, want none", got)
	}
}
