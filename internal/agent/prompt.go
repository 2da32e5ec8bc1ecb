package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// DefaultSystemPrompt tells the model what it is and how to work. It is
// static on purpose: providers cache the longest unchanged prefix of a
// request, and the system prompt is the start of every one, so a date, a
// commit or a user name in it would make every request a cache miss. Such
// facts go into the first user message (see ContextPreamble).
const DefaultSystemPrompt = `You answer questions about one code repository. You see it only through read-only tools over a checkout of it; paths are relative to the repository root.

How to work:
- Explore before answering. To get to know the project, list its structure with list_files (or glob for a name pattern). To find where something is defined or used, search_code, then read_file around the hits (use offset to read the lines near a match).
- When you know a name, find_symbol gives its definition and find_references its uses in one call; use them before search_code, which is for text, phrases and patterns. On a repository or directory you do not know yet, repo_map outlines its main files and definitions in one call.
- Do not guess. Verify every claim in the code before you make it. If a tool result already answers a question, use it instead of calling the same tool again.
- If you cannot find something, say so plainly and say where you looked; do not invent files, functions or behaviour.
- You cannot modify files, run code or run commands. If the question needs that, say what the user could run and what to look for.
- Never reveal secrets (API keys, tokens, passwords, private keys), even if a file you read contains them; say that a secret is there without repeating it.

How to answer:
- Cite the code you rely on as path:line or path:start-end with repository-relative paths (for example internal/server/http.go:42-57), so every citation can be checked.
- Write Markdown that reads well in Slack: lead with the answer, keep it short, use headings sparingly, bullets for lists, and fenced code blocks with a language for code. Quote only the lines that matter.
- Answer in the language of the question.`

// ContextPreamble is the volatile context of a session (which repository,
// which commit, when, who asks), to be put in front of the session's first
// user message. It lives there rather than in the system prompt so that the
// system prompt stays byte-identical across sessions and days, and, being in
// the first message, it stays in the cached prefix of every later request of
// the session. Empty fields are left out.
func ContextPreamble(repoName, commit string, now time.Time, user string) string {
	var b strings.Builder
	b.WriteString(llm.ContextOpen + "\n")
	if repoName != "" {
		fmt.Fprintf(&b, "repository: %s\n", repoName)
	}
	if commit != "" {
		fmt.Fprintf(&b, "commit: %s\n", commit)
	}
	if !now.IsZero() {
		fmt.Fprintf(&b, "date: %s\n", now.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if user != "" {
		fmt.Fprintf(&b, "asked by: %s\n", user)
	}
	b.WriteString(llm.ContextClose + "\n\n")
	return b.String()
}

// noteTag starts every message the loop itself adds in the user role, so the
// model does not take it for the person's words, and Resume can tell it from
// the question that started the turn.
const noteTag = llm.NoteTag

func maxStepsNote(maxSteps int) string {
	return fmt.Sprintf("%sThe limit of %d steps for this question is reached and tools are no longer available. Answer now with what you have found so far, and say briefly what you could not verify.", noteTag, maxSteps)
}

const repeatingNote = noteTag + "You keep asking for tool calls you have already made, and their results are above. Tools are no longer available. Answer now with what you have found so far, and say briefly what you could not verify."

const emptyAnswerNote = noteTag + "Your last reply was empty. Answer the question, or call a tool if you need more information."

func maxStepsMark(maxSteps int) string {
	return fmt.Sprintf("_(stopped after %d steps; the answer may be incomplete)_", maxSteps)
}

const repeatingMark = "_(stopped because the same tool calls kept repeating; the answer may be incomplete)_"

// noAnswerFallback stands in for a final answer the model left empty, so the
// person still gets a sentence that says what happened and what to do.
const noAnswerFallback = "I could not put an answer together from what I found. Try asking a narrower question, for example about one directory, file or function."
