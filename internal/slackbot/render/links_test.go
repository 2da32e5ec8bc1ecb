package render

import "testing"

// TestShowLinkHosts holds the hostile cases the renderer meets when the
// model links on its own: every destination off the home web view shows
// its host, Slack's own link markup and reference definitions show as
// text, and code is left as written.
func TestShowLinkHosts(t *testing.T) {
	home := []string{"https://github.com/acme/app"}
	tests := []struct{ name, in, want string }{
		{"home link", "[x](https://github.com/acme/app/blob/abc/x.go#L1)", "[x](https://github.com/acme/app/blob/abc/x.go#L1)"},
		{"home host, other repository", "[y](https://GitHub.com/other/y)", "[y](https://GitHub.com/other/y) (github.com/other/y)"},
		{"home host, repository whose name extends the home's", "[y](https://github.com/acme/app-evil/x)", "[y](https://github.com/acme/app-evil/x) (github.com/acme/app-evil/x)"},
		{"home host, dot segments out of the home", "[y](https://github.com/acme/app/../../evil/x) [z](https://github.com/acme/app/%2e%2e/%2E%2E/evil/x)",
			"[y](https://github.com/acme/app/../../evil/x) (github.com/evil/x) [z](https://github.com/acme/app/%2e%2e/%2E%2E/evil/x) (github.com/evil/x)"},
		{"home host, backslashes out of the home", `[y](https://github.com/acme/app/..\..\evil)`, `[y](https://github.com/acme/app/..\..\evil) (github.com/evil)`},
		{"home with user info", "[y](https://evil@github.com/acme/app/x)", "[y](https://evil@github.com/acme/app/x) (github.com/acme/app/x)"},
		{"home in upper case", "[x](HTTPS://GITHUB.COM/acme/app/blob/abc/x.go)", "[x](HTTPS://GITHUB.COM/acme/app/blob/abc/x.go)"},
		{"foreign link", "See [the docs](https://evil.example/a?b=c).", "See [the docs](https://evil.example/a?b=c) (evil.example)."},
		{"port", "[x](http://evil.example:8080/)", "[x](http://evil.example:8080/) (evil.example:8080)"},
		{"user info hides the host", "[x](https://github.com@evil.example/)", "[x](https://github.com@evil.example/) (evil.example)"},
		{"protocol-relative", "[x](//evil.example/a)", "[x](//evil.example/a) (evil.example)"},
		{"title and angle brackets", `[x](<https://evil.example/a> "github.com")`, `[x](<https://evil.example/a> "github.com") (evil.example)`},
		{"image", "![logo](https://evil.example/p.png)", "![logo](https://evil.example/p.png) (evil.example)"},
		{"image inside a link", "[![a](https://img.example/b.png)](https://evil.example/)",
			"[![a](https://img.example/b.png) (img.example)](https://evil.example/) (evil.example)"},
		{"text is the URL", "[https://evil.example/a](https://evil.example/a) [evil.example/a](https://evil.example/a)",
			"[https://evil.example/a](https://evil.example/a) [evil.example/a](https://evil.example/a)"},
		{"text is another URL", "[https://github.com/acme/app](https://evil.example/)",
			"[https://github.com/acme/app](https://evil.example/) (evil.example)"},
		{"no host", "[m](mailto:a@evil.example) [j](JavaScript:alert(1))", "[m](mailto:a@evil.example) (mailto:) [j](JavaScript:alert(1)) (javascript:)"},
		{"relative", "[guide](docs/guide.md)", "[guide](docs/guide.md)"},
		{"lookalike host", "[x](https://gіthub.com/acme/app)", `[x](https://gіthub.com/acme/app) (g\\u0456thub.com)`},
		{"host with an underscore", "[x](https://a_b.example/)", `[x](https://a_b.example/) (a\_b.example)`},
		{"Slack link markup", "<https://evil.example/x|README.md:1>", "<" + zeroWidthSpace + "https://evil.example/x|README.md:1>"},
		{"Slack mailto markup", "<mailto:a@evil.example|support>", "<" + zeroWidthSpace + "mailto:a@evil.example|support>"},
		{"autolink shows its URL", "<https://evil.example/x>", "<https://evil.example/x>"},
		{"HTML link", `<a href="https://evil.example/">README.md:1</a> <IMG src=x> <br> <abbr>`,
			"<" + zeroWidthSpace + `a href="https://evil.example/">README.md:1</a> <` + zeroWidthSpace + "IMG src=x> <br> <abbr>"},
		{"reference definition", "[README.md:1][r]\n\n[r]: https://evil.example/x", "[README.md:1][r]\n\n\\[r]: https://evil.example/x"},
		{"reference definition in a block quote", "[x][r]\n\n> [r]: https://evil.example/x", "[x][r]\n\n> \\[r]: https://evil.example/x"},
		{"reference definition in a list", "[x][r]\n\n- [r]: https://evil.example/x\n1. > [s]: https://evil.example/y",
			"[x][r]\n\n- \\[r]: https://evil.example/x\n1. > \\[s]: https://evil.example/y"},
		{"reference definition with a label over two lines", "[x\ny][]\n\n[x\ny]: https://evil.example/x",
			"[x\ny][]\n\n[x\ny\\]: https://evil.example/x"},
		{"indented reference definition", "   [r]: <https://evil.example/x> \"t\"", "   \\[r]: <https://evil.example/x> \"t\""},
		{"escaped bracket is no link", `\[x](https://evil.example/)`, `\[x](https://evil.example/)`},
		{"code span", "`[x](https://evil.example/)` and `<https://evil.example|x>`", "`[x](https://evil.example/)` and `<https://evil.example|x>`"},
		{"fenced code", "```\n[x](https://evil.example/)\n[r]: https://evil.example\n```\n[x](https://evil.example/)",
			"```\n[x](https://evil.example/)\n[r]: https://evil.example\n```\n[x](https://evil.example/) (evil.example)"},
		{"CRLF kept", "[x](https://evil.example/)\r\nnext", "[x](https://evil.example/) (evil.example)\r\nnext"},
		// Code spans, escapes and autolinks are read as cite reads them
		// (CommonMark): a backslash escapes a parenthesis in a destination,
		// a bracket in a code span closes no link text, and a backtick in
		// an autolink opens no code span that would hide the next link.
		{"escaped parenthesis in the destination", `[docs](https://evil.example/a\)b) c`, `[docs](https://evil.example/a\)b) (evil.example) c`},
		{"bracket in a code span of the text", "[a `]` b](https://evil.example/x)", "[a `]` b](https://evil.example/x) (evil.example)"},
		{"backtick in an autolink", "<https://x.example/`> [d](https://evil.example) `", "<https://x.example/`> [d](https://evil.example) (evil.example) `"},
		{"code span over a link's bracket", "[`](u) [d](https://evil.example) `", "[`](u) [d](https://evil.example) `"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := showLinkHosts(tt.in, home); got != tt.want {
				t.Errorf("showLinkHosts(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
	if got, want := showLinkHosts("[x](https://github.com/acme/app)", nil), "[x](https://github.com/acme/app) (github.com)"; got != want {
		t.Errorf("without a home web view: got %q, want %q", got, want)
	}
}
