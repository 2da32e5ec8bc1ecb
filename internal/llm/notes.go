package llm

import "strings"

// NoteTag starts every message the agent loop itself adds in the user role
// ("the step limit is reached, answer now"), so the model does not take it
// for the person's words. Whatever reads a history (the agent resuming a
// turn, the context budget finding where a turn starts, the demo model)
// must tell such notes from questions by this tag: a note is not a turn.
const NoteTag = "[note from askrepo, not from the user] "

// QuestionText is the content of a user message for a question someone
// typed. Anyone who may ask can type the note tag; a question that starts
// with it would pass for the loop's words with the model, and for no
// question at all with whatever reads the history later. It is said to be
// quoted instead.
func QuestionText(s string) string {
	if strings.HasPrefix(s, NoteTag) {
		return "The user wrote: " + s
	}
	return s
}

// IsNote reports whether m is a note the agent loop added, not a question.
func IsNote(m Message) bool {
	return m.Role == RoleUser && strings.HasPrefix(m.Content, NoteTag)
}

// IsQuestion reports whether m is a user message that starts a turn: a
// user-role message that is not a loop note.
func IsQuestion(m Message) bool {
	return m.Role == RoleUser && !strings.HasPrefix(m.Content, NoteTag)
}

// Delimiters of the context block (repository, commit, date, who asks) the
// agent puts in front of a session's first question.
const (
	ContextOpen  = "<context>"
	ContextClose = "</context>"
)

// SplitContext splits a leading <context>…</context> block off s. block is
// the block itself, delimiters included, and rest what follows it, both
// trimmed of surrounding space; without such a block, block is "" and rest
// is s trimmed.
func SplitContext(s string) (block, rest string) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, ContextOpen) {
		return "", t
	}
	i := strings.Index(t, ContextClose)
	if i < 0 {
		return "", t
	}
	end := i + len(ContextClose)
	return t[:end], strings.TrimSpace(t[end:])
}
