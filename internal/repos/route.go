package repos

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoRepo is returned by Resolve for a channel no repository serves: the
// bot must not read anything there, only say it is not enabled.
var ErrNoRepo = errors.New("no repository is enabled in this channel")

// UnknownRepoError is returned by Resolve when a question names a
// repository this channel may not use (or that does not exist; the two are
// not told apart, so a channel learns nothing about repos it cannot read).
// Its message is a sentence fit for Slack. It wraps ErrUnknownRepo.
type UnknownRepoError struct {
	Name    string   // as the user typed it
	Choices []string // what the channel may use, its default first
}

func (e *UnknownRepoError) Error() string {
	if len(e.Choices) == 1 {
		return fmt.Sprintf("there is no repository called %q here; this channel can use %s (start the question with \"in %s:\")", e.Name, e.Choices[0], e.Choices[0])
	}
	return fmt.Sprintf("there is no repository called %q here; this channel can use %s (start the question with \"in %s:\" to pick one)", e.Name, strings.Join(e.Choices, ", "), e.Choices[0])
}

func (e *UnknownRepoError) Unwrap() error { return ErrUnknownRepo }

// ForChannel returns the repositories channel may use, its default first,
// then the others in configuration order; none when it may use none.
//
// The default is the repo whose default_for names the channel, else (for
// a DM) the one whose default_for has "dm", else the one whose default_for
// has "*"; without any, the first repo listing the channel by ID (or "dm"
// for a DM) wins over the first serving it only through "*".
func (m *Manager) ForChannel(channel string) []string {
	var names []string
	var exact, dmDef, anyDef, firstListed string
	dm := isDM(channel)
	for _, s := range m.specs {
		listed := slices.Contains(s.Channels, channel) || (dm && slices.Contains(s.Channels, DirectMessages))
		if !listed && !slices.Contains(s.Channels, AnyChannel) {
			continue
		}
		names = append(names, s.Name)
		switch {
		case slices.Contains(s.DefaultFor, channel):
			exact = s.Name
		case dm && slices.Contains(s.DefaultFor, DirectMessages):
			dmDef = s.Name
		case slices.Contains(s.DefaultFor, AnyChannel):
			anyDef = s.Name
		}
		if listed && firstListed == "" {
			firstListed = s.Name
		}
	}
	def := ""
	for _, c := range []string{exact, dmDef, anyDef, firstListed} {
		if c != "" {
			def = c
			break
		}
	}
	if def == "" || len(names) == 0 || names[0] == def {
		return names
	}
	out := make([]string, 0, len(names))
	out = append(out, def)
	for _, n := range names {
		if n != def {
			out = append(out, n)
		}
	}
	return out
}

// Resolve picks the repository for a new thread's question in channel
// (text with the bot's mention already removed) and returns the question
// without the choice. The choice is "in NAME:" or "in NAME," at the start,
// in any case:
//
//	in payments: how are refunds retried?
//	In Payments, where is the retry limit?
//
// Otherwise the channel's default answers and text is returned trimmed.
// Since "in general, …" is also English, the comma form picks a repo only
// when NAME is one this channel may use, and the colon form is not read
// as a choice when NAME has a dot ("in main.go: …"); other names before a
// colon give an *UnknownRepoError listing the choices. A repository
// configured for other channels only is treated as one that does not
// exist, in every form. A channel that may use no repo gives ErrNoRepo. Resolve reads
// only the configuration, so it answers the same whether or not a clone
// is available.
func (m *Manager) Resolve(channel, text string) (repo, question string, err error) {
	return m.choose(m.ForChannel(channel), text)
}

// Choose is Resolve for a question asked where every repository may be
// read (the terminal, run by whoever runs the service): "in NAME:" picks
// one, otherwise the first in configuration order answers.
func (m *Manager) Choose(text string) (repo, question string, err error) {
	return m.choose(m.Repos(), text)
}

func (m *Manager) choose(choices []string, text string) (repo, question string, err error) {
	if len(choices) == 0 {
		return "", "", ErrNoRepo
	}
	name, rest, colon, ok := parseChoice(text)
	if !ok {
		return choices[0], strings.TrimSpace(text), nil
	}
	lower := strings.ToLower(name)
	if slices.Contains(choices, lower) {
		return lower, rest, nil
	}
	// Whether name is configured for another channel must not change
	// the outcome: the channel would learn that it exists.
	if colon && !strings.Contains(name, ".") {
		return "", "", &UnknownRepoError{Name: name, Choices: choices}
	}
	return choices[0], strings.TrimSpace(text), nil
}

// parseChoice splits "in NAME: rest" or "in NAME, rest" (leading space,
// any case, spaces before the punctuation allowed). NAME has the
// characters of a repo name, in either case.
func parseChoice(text string) (name, rest string, colon, ok bool) {
	t := strings.TrimSpace(text)
	if len(t) < 3 || !strings.EqualFold(t[:2], "in") || (t[2] != ' ' && t[2] != '\t') {
		return "", "", false, false
	}
	t = strings.TrimLeft(t[2:], " \t")
	end := 0
	for end < len(t) && isNameByte(t[end]) {
		end++
	}
	if end == 0 {
		return "", "", false, false
	}
	name = t[:end]
	after := strings.TrimLeft(t[end:], " \t")
	if after == "" || (after[0] != ':' && after[0] != ',') {
		return "", "", false, false
	}
	return name, strings.TrimSpace(after[1:]), after[0] == ':', true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
