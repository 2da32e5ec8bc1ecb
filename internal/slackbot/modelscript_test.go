package slackbot

import (
	"strings"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
)

// question is the text of the last user message of a request, without the
// context preamble the bot puts in front of a session's first question and
// skipping the bot's notes to the model.
func question(r llmtest.Request) string {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		m := r.Chat.Messages[i]
		if m.Role == "user" && !strings.HasPrefix(m.Content, "[note") {
			q := m.Content
			if i := strings.Index(q, "</context>"); i >= 0 {
				q = q[i+len("</context>"):]
			}
			return strings.TrimSpace(q)
		}
	}
	return ""
}

// heldAnswer is readThenAnswer with its answer held until hold opens: the
// turn stays running after its tool step, its progress and Stop button on
// show.
func heldAnswer(hold *gate) llmtest.Script {
	return func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if r.Last().Role == "tool" {
			rep.Wait = hold.c()
		}
		return rep
	}
}

// heldAnswerTo is heldAnswer for the question q alone: the turns of other
// questions are answered at once.
func heldAnswerTo(q string, hold *gate) llmtest.Script {
	return func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if question(r) == q && r.Last().Role == "tool" {
			rep.Wait = hold.c()
		}
		return rep
	}
}

// readThenAnswer is the model most tests use: asked a question, it reads
// README.md and lists the root in one step; given the results, it answers
// "Answer to: <question>". It is stateless, so concurrent threads cannot
// confuse it.
func readThenAnswer(r llmtest.Request) llmtest.Reply {
	if r.Last().Role == "tool" {
		return llmtest.Reply{Content: "**Answer** to: " + question(r), Usage: &llmtest.Usage{Prompt: 1200, Cached: 800, Output: 40}}
	}
	return llmtest.Reply{
		Calls: []llmtest.Call{{Name: "read_file", Args: `{"path":"README.md"}`}, {Name: "list_files", Args: `{"path":"."}`}},
		Usage: &llmtest.Usage{Prompt: 1000, Cached: 0, Output: 30},
	}
}
