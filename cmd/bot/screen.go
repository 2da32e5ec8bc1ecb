package main

import (
	"io"
	"os"

	"github.com/askrepo/askrepo/internal/termsafe"
	"github.com/mattn/go-isatty"
)

// screen is one of the streams the bot prints to, stdout or stderr. Every
// byte written to it is escaped by termsafe, since answers, tool output,
// repository names and stored sessions are text an attacker may have
// written; the bot's own colours go around that text through style, and
// only when this stream is a terminal that wants them.
type screen struct {
	*termsafe.Writer
	color bool
}

func newScreen(w io.Writer, env func(string) (string, bool)) *screen {
	return &screen{Writer: termsafe.NewWriter(w), color: wantColor(w, env)}
}

const (
	bold   = "\x1b[1m"
	dim    = "\x1b[2m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	reset  = "\x1b[0m"
)

// style prints text (escaped) in the SGR style code, or plain without
// colour.
func (s *screen) style(code, text string) {
	if !s.color || text == "" {
		io.WriteString(s, text)
		return
	}
	s.Raw(code)
	io.WriteString(s, text)
	s.Raw(reset)
}

// wantColor decides colour for one stream: never with NO_COLOR set
// (no-color.org), always with FORCE_COLOR or CLICOLOR_FORCE set to
// anything but 0, otherwise when the stream is a terminal that is not
// TERM=dumb. A file or /dev/null is not a terminal, though /dev/null is a
// character device.
func wantColor(w io.Writer, env func(string) (string, bool)) bool {
	if v, _ := env("NO_COLOR"); v != "" {
		return false
	}
	for _, name := range []string{"FORCE_COLOR", "CLICOLOR_FORCE"} {
		if v, _ := env(name); v != "" && v != "0" {
			return true
		}
	}
	if term, _ := env("TERM"); term == "dumb" {
		return false
	}
	return isTerminal(w)
}

// isTerminal reports whether r or w is a terminal, so colours and prompts
// are used only where a person is looking.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && (isatty.IsTerminal(file.Fd()) || isatty.IsCygwinTerminal(file.Fd()))
}
