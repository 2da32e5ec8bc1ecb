package llm

import "strings"

// NoteTag starts every message the agent loop itself adds in the user role
// ("the step limit is reached, answer now"), so the model does not take it
// for the person's words. Whatever reads a history (the agent resuming a
// turn, the context budget finding where a turn starts, the demo model)
// must tell such notes from questions by this tag: a note is not a turn.
const NoteTag = "[note from askrepo, not from the user] "

// IsNote reports whether m is a note the agent loop added, not a question.
func IsNote(m Message) bool {
	return m.Role == RoleUser && strings.HasPrefix(m.Content, NoteTag)
}

// IsQuestion reports whether m is a user message that starts a turn: a
// user-role message that is not a loop note.
func IsQuestion(m Message) bool {
	return m.Role == RoleUser && !strings.HasPrefix(m.Content, NoteTag)
}
