package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Tool names the demo model knows how to use. They match the tools package;
// llm may not import it, so they are repeated here.
const (
	demoListTool = "list_files"
	demoReadTool = "read_file"
)

// Demo is a model that needs no credentials, used when no API key is
// configured. It drives the real loop with real tool calls (list the
// repository, read its README) and answers with a summary of what the tools
// returned plus how to configure a real model, so a fresh install shows the
// whole path end to end: Slack thread, tool context lines, answer, footer.
//
// It is stateless and safe for concurrent use: everything it decides comes
// from the request. "This turn" is the messages after the user's latest
// question, so a follow-up question in the same thread runs the steps again.
type Demo struct{}

var _ Model = (*Demo)(nil)

// NewDemo returns the demo model.
func NewDemo() *Demo { return &Demo{} }

// ModelName names the demo in footers and logs.
func (*Demo) ModelName() string { return "demo" }

// Complete picks the next step: list_files, then read_file on a README,
// then a final answer. Usage is estimated at 4 bytes per token, so footers
// show plausible numbers.
func (*Demo) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("demo model: %w", err)
	}
	prompt := estimatePrompt(req)

	start := turnStart(req.Messages)
	question := ""
	if start >= 0 {
		_, question = SplitContext(req.Messages[start].Content)
	}
	turn := req.Messages[start+1:]

	offered := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		offered[t.Name] = true
	}

	list, listed := lastResult(turn, demoListTool)
	read, readDone := lastResult(turn, demoReadTool)

	id := func(name string) string { return "demo_" + name + "_" + strconv.Itoa(len(req.Messages)) }
	call := func(name, path string) (Response, error) {
		args, _ := json.Marshal(map[string]string{"path": path})
		msg := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id(name), Name: name, Arguments: string(args)}}}
		return Response{Message: msg, Usage: Usage{PromptTokens: prompt, CompletionTokens: estimateTokens(len(args) + len(name))}, FinishReason: "tool_calls"}, nil
	}

	if offered[demoListTool] && !listed {
		return call(demoListTool, ".")
	}
	var entries []string
	readme := ""
	if listed && !list.IsError {
		entries = topLevel(list.Content)
		readme = findReadme(entries)
	}
	if readme != "" && offered[demoReadTool] && !readDone {
		return call(demoReadTool, readme)
	}

	// Nothing left to call. With no tools offered (the loop asking for a
	// final answer) fall back to whatever the whole conversation holds.
	if !listed {
		list, listed = lastResult(req.Messages, demoListTool)
		if listed && !list.IsError {
			entries = topLevel(list.Content)
			readme = findReadme(entries)
		}
	}
	if !readDone {
		read, readDone = lastResult(req.Messages, demoReadTool)
	}
	answer := demoAnswer(question, list, listed, entries, readme, read, readDone)
	return Response{
		Message:      Message{Role: RoleAssistant, Content: answer},
		Usage:        Usage{PromptTokens: prompt, CompletionTokens: estimateTokens(len(answer))},
		FinishReason: "stop",
	}, nil
}

// turnStart finds the user message that asked the current question, or -1.
// Notes the loop adds mid-turn ("the step limit is reached, answer now")
// are user messages too; they are told from questions by their tag, not by
// where they stand: a question can follow a tool result as well, when the
// turn before it was stopped and ended on a "cancelled" result.
func turnStart(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if IsQuestion(msgs[i]) {
			return i
		}
	}
	return -1
}

// toolResult is a tool message with its error state normalised.
type toolResult struct {
	Content string
	IsError bool
}

// lastResult finds the latest result of a call to the named tool among msgs.
func lastResult(msgs []Message, name string) (toolResult, bool) {
	ids := map[string]bool{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			if tc.Name == name {
				ids[tc.ID] = true
			}
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == RoleTool && ids[m.ToolCallID] {
			isErr := m.IsError || strings.HasPrefix(strings.ToLower(strings.TrimSpace(m.Content)), "error")
			return toolResult{Content: m.Content, IsError: isErr}, true
		}
	}
	return toolResult{}, false
}

// topLevel turns a listing (one entry per line, directories ending in "/",
// maybe nested paths and notices) into the sorted-as-given top-level names.
func topLevel(listing string) []string {
	seen := map[string]bool{}
	var out []string
	for line := range strings.Lines(listing) {
		e := strings.TrimSpace(line)
		if i := strings.Index(e, "@ -> "); i > 0 {
			e = e[:i] // a symlink: "name@ -> target"
		}
		// Notices ("42 entries", "[truncated …]") are sentences; paths
		// in a repository rarely contain spaces.
		if e == "" || strings.ContainsAny(e, " \t") || strings.HasPrefix(e, "[") || strings.HasPrefix(e, "(") {
			continue
		}
		e = strings.TrimPrefix(e, "./")
		e = strings.TrimSuffix(e, "@")
		if e == "" || e == "." || e == "./" {
			continue
		}
		if i := strings.Index(e, "/"); i >= 0 {
			e = e[:i+1]
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// findReadme picks the README among top-level names, preferring README.md.
func findReadme(entries []string) string {
	found := ""
	for _, e := range entries {
		if strings.HasSuffix(e, "/") {
			continue
		}
		l := strings.ToLower(e)
		if l == "readme.md" {
			return e
		}
		if found == "" && (l == "readme" || strings.HasPrefix(l, "readme.")) {
			found = e
		}
	}
	return found
}

var numberedLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\d+\t`) })

// readmeGist extracts a title and first paragraph from read_file output,
// dropping line-number prefixes and the tool's continuation notices.
func readmeGist(out string) (title, para string) {
	var lines []string
	numbered := numberedLine().MatchString(out)
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if numbered {
			loc := numberedLine().FindStringIndex(line)
			if loc == nil {
				continue // a notice such as "lines 1-200 of 950 shown"
			}
			line = line[loc[1]:]
		}
		lines = append(lines, line)
	}
	inFence := false
	var paraLines []string
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~") {
			inFence = !inFence
			if len(paraLines) > 0 {
				break
			}
			continue
		}
		if inFence {
			continue
		}
		if l == "" {
			if len(paraLines) > 0 {
				break
			}
			continue
		}
		if title == "" {
			switch {
			case strings.HasPrefix(l, "#"):
				title = strings.TrimSpace(strings.TrimLeft(l, "#"))
				continue
			case i+1 < len(lines) && isSetextUnderline(lines[i+1]):
				title = l
				continue
			}
		}
		if isSetextUnderline(l) || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "<") ||
			strings.HasPrefix(l, "![") || strings.HasPrefix(l, "[![") {
			if len(paraLines) > 0 {
				break
			}
			continue
		}
		paraLines = append(paraLines, l)
	}
	para = oneLine(strings.Join(paraLines, " "), 400)
	if title == "" && para != "" {
		title, para = para, ""
	}
	return oneLine(title, 120), para
}

func isSetextUnderline(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= 3 && (strings.Trim(s, "=") == "" || strings.Trim(s, "-") == "")
}

// demoAnswer writes the final answer from what the tools returned.
func demoAnswer(question string, list toolResult, listed bool, entries []string, readme string, read toolResult, readDone bool) string {
	var b strings.Builder
	b.WriteString("I am the demo model, so I cannot really answer")
	if q := oneLine(question, 120); q != "" {
		fmt.Fprintf(&b, " “%s”", q)
	}
	b.WriteString(", but here is what a first look at the repository shows.\n")

	switch {
	case !listed:
		b.WriteString("\nI had no file listing to look at.\n")
	case list.IsError:
		fmt.Fprintf(&b, "\nListing the repository failed: %s\n", oneLine(list.Content, 200))
	case len(entries) == 0:
		b.WriteString("\nThe repository's top level looks empty.\n")
	default:
		const show = 20
		names := make([]string, 0, show)
		for _, e := range entries[:min(len(entries), show)] {
			names = append(names, "`"+e+"`")
		}
		fmt.Fprintf(&b, "\nTop level (%d entries): %s", len(entries), strings.Join(names, ", "))
		if len(entries) > show {
			fmt.Fprintf(&b, " and %d more", len(entries)-show)
		}
		b.WriteString("\n")
	}

	switch {
	case !readDone && readme != "":
		fmt.Fprintf(&b, "There is a README (`%s`), which I did not read.\n", readme)
	case !readDone:
		if listed && !list.IsError {
			b.WriteString("I found no README at the top level.\n")
		}
	case read.IsError:
		fmt.Fprintf(&b, "Reading the README failed: %s\n", oneLine(read.Content, 200))
	default:
		title, para := readmeGist(read.Content)
		name := "The README"
		if readme != "" {
			name = fmt.Sprintf("The README (`%s`)", readme)
		}
		switch {
		case title == "" && para == "":
			fmt.Fprintf(&b, "%s is empty.\n", name)
		case para == "":
			fmt.Fprintf(&b, "%s is titled “%s”.\n", name, title)
		default:
			fmt.Fprintf(&b, "%s is titled “%s”: %s\n", name, title, para)
		}
	}

	b.WriteString("\nTo get real answers, configure a model: set OPENAI_API_KEY, and optionally OPENAI_BASE_URL " +
		"(any OpenAI-compatible server: DeepSeek, vLLM, Ollama, llama.cpp) and OPENAI_MODEL, " +
		"for example in a .env file, then restart.")
	return b.String()
}

// estimatePrompt is a rough prompt size: 4 bytes per token.
func estimatePrompt(req Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.Reasoning) + 8
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments) + len(tc.ID)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return estimateTokens(n)
}

func estimateTokens(bytes int) int { return max(1, (bytes+3)/4) }
