package cite

import (
	"strings"
	"testing"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func TestWebFromRemote(t *testing.T) {
	tests := []struct {
		remote string
		want   Web
		ok     bool
	}{
		{"https://github.com/acme/payments.git", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, true},
		{"https://github.com/acme/payments", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, true},
		{"https://github.com/acme/payments/", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, true},
		{"git@github.com:acme/payments.git", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, true},
		{"ssh://git@github.com/acme/payments.git", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, true},
		{"ssh://git@gitlab.example.com:2222/group/sub/payments.git", Web{Base: "https://gitlab.example.com/group/sub/payments", Kind: KindGitLab}, true},
		{"https://gitlab.com/group/sub/deeper/payments.git", Web{Base: "https://gitlab.com/group/sub/deeper/payments", Kind: KindGitLab}, true},
		{"https://oauth2:glpat-SECRET@gitlab.com/group/payments.git", Web{Base: "https://gitlab.com/group/payments", Kind: KindGitLab}, true},
		{"https://user:ghp_SECRET@github.com/acme/payments", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, true},
		{"https://x-access-token:SECRET@github.com/acme/payments.git", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, true},
		{"git@bitbucket.org:acme/payments.git", Web{Base: "https://bitbucket.org/acme/payments", Kind: KindBitbucket}, true},
		{"https://codeberg.org/acme/payments.git", Web{Base: "https://codeberg.org/acme/payments", Kind: KindGitea}, true},
		{"http://gitea.local:3000/acme/payments.git", Web{Base: "http://gitea.local:3000/acme/payments", Kind: KindGitea}, true},
		{"git@forgejo.acme.dev:acme/payments.git", Web{Base: "https://forgejo.acme.dev/acme/payments", Kind: KindGitea}, true},
		{"https://github.acme.com/acme/payments.git", Web{Base: "https://github.acme.com/acme/payments", Kind: KindGitHub}, true},
		{"git://github.com/acme/payments.git", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, true},
		{"https://git.acme.internal/acme/payments.git", Web{}, false},
		{"/srv/repos/payments.git", Web{}, false},
		{"file:///srv/repos/payments.git", Web{}, false},
		{"../payments", Web{}, false},
		{"https://github.com/acme", Web{}, false},
		{`C:\repos\payments`, Web{}, false},
		{"", Web{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			got, ok := WebFromRemote(tt.remote)
			if got != tt.want || ok != tt.ok {
				t.Errorf("WebFromRemote(%q) = %+v, %v; want %+v, %v", tt.remote, got, ok, tt.want, tt.ok)
			}
			if strings.Contains(got.Base, "SECRET") || strings.Contains(got.Base, "@") {
				t.Errorf("credentials leaked into %q", got.Base)
			}
		})
	}
}

func TestWebFromRemoteAs(t *testing.T) {
	got, err := WebFromRemoteAs("git@git.acme.internal:acme/payments.git", "forgejo")
	if err != nil || got != (Web{Base: "https://git.acme.internal/acme/payments", Kind: KindGitea}) {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := WebFromRemoteAs("git@git.acme.internal:acme/payments.git", ""); err == nil || !strings.Contains(err.Error(), "give its kind") {
		t.Errorf("unknown host without kind: err = %v, want advice to give the kind", err)
	}
	if _, err := WebFromRemoteAs("git@github.com:acme/payments.git", "sourceforge"); err == nil || !strings.Contains(err.Error(), "use github, gitlab") {
		t.Errorf("bad kind: err = %v", err)
	}
}

func TestParseWeb(t *testing.T) {
	tests := []struct {
		base    string
		kind    Kind
		want    Web
		wantErr string
	}{
		{"https://github.com/acme/payments", "", Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}, ""},
		{"https://git.acme.internal/acme/payments/", "gitea", Web{Base: "https://git.acme.internal/acme/payments", Kind: KindGitea}, ""},
		{"https://code.acme.internal/group/sub/payments.git", "GitLab", Web{Base: "https://code.acme.internal/group/sub/payments", Kind: KindGitLab}, ""},
		{"https://git.acme.internal/acme/payments", "", Web{}, "set it to github"},
		{"https://user:pw@github.com/acme/payments", "", Web{}, "credentials"},
		{"ftp://github.com/acme/payments", "", Web{}, "https://"},
		{"https://github.com/acme", "", Web{}, "owner and the repository"},
		{"https://github.com/acme/payments?tab=readme", "", Web{}, "query"},
		{"https://github.com/acme/payments", "svn", Web{}, "unknown web view kind"},
		{"ftp://tok-user@github.com/acme/payments", "", Web{}, "https://"},
		{"https://github.com/acme/payments?access_token=tok-query", "", Web{}, "query"},
		{"https://tok-user@github.com/acme", "", Web{}, "credentials"},
		{"https://github.com/acme/payments#tok-frag", "", Web{}, "fragment"},
		{"https://tok-user@[::1/acme/payments", "", Web{}, "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			got, err := ParseWeb(tt.base, tt.kind)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "tok-") {
					t.Errorf("err = %v: it quotes a credential", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseWeb = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestPermalink(t *testing.T) {
	gh := Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}
	gl, _ := WebFromRemote("ssh://git@gitlab.example.com:2222/group/sub/payments.git")
	bb := Web{Base: "https://bitbucket.org/acme/payments", Kind: KindBitbucket}
	gt := Web{Base: "https://gitea.example.com/acme/payments", Kind: KindGitea}
	cb, _ := WebFromRemote("git@codeberg.org:acme/payments.git")
	tests := []struct {
		name       string
		web        Web
		path       string
		start, end int
		want       string
	}{
		{"github range", gh, "internal/x.go", 10, 20, "https://github.com/acme/payments/blob/" + sha + "/internal/x.go#L10-L20"},
		{"github line", gh, "internal/x.go", 10, 10, "https://github.com/acme/payments/blob/" + sha + "/internal/x.go#L10"},
		{"github whole file", gh, "internal/x.go", 0, 0, "https://github.com/acme/payments/blob/" + sha + "/internal/x.go"},
		{"github end before start", gh, "x.go", 10, 3, "https://github.com/acme/payments/blob/" + sha + "/x.go#L10"},
		{"gitlab subgroups over ssh port", gl, "internal/x.go", 10, 20, "https://gitlab.example.com/group/sub/payments/-/blob/" + sha + "/internal/x.go#L10-20"},
		{"gitlab line", gl, "x.go", 7, 0, "https://gitlab.example.com/group/sub/payments/-/blob/" + sha + "/x.go#L7"},
		{"bitbucket range", bb, "src/x.py", 10, 20, "https://bitbucket.org/acme/payments/src/" + sha + "/src/x.py#lines-10:20"},
		{"bitbucket line", bb, "src/x.py", 10, 10, "https://bitbucket.org/acme/payments/src/" + sha + "/src/x.py#lines-10"},
		{"gitea range", gt, "main.go", 10, 20, "https://gitea.example.com/acme/payments/src/commit/" + sha + "/main.go#L10-L20"},
		{"codeberg (forgejo)", cb, "main.go", 3, 3, "https://codeberg.org/acme/payments/src/commit/" + sha + "/main.go#L3"},
		{"escaped segments", gh, "docs/my notes/#1?(draft)/café.md", 2, 0,
			"https://github.com/acme/payments/blob/" + sha + "/docs/my%20notes/%231%3F%28draft%29/caf%C3%A9.md#L2"},
		{"unknown kind", Web{Base: "https://git.acme.internal/a/b"}, "x.go", 1, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.web.Permalink(sha, tt.path, tt.start, tt.end); got != tt.want {
				t.Errorf("Permalink = %q\nwant        %q", got, tt.want)
			}
		})
	}
	if got := gh.Permalink("", "x.go", 1, 1); got != "" {
		t.Errorf("no commit: got %q, want no link", got)
	}
}

func TestTreeLink(t *testing.T) {
	tests := []struct {
		web  Web
		want string
	}{
		{Web{Base: "https://github.com/a/b", Kind: KindGitHub}, "https://github.com/a/b/tree/" + sha + "/internal/tools"},
		{Web{Base: "https://gitlab.com/g/s/b", Kind: KindGitLab}, "https://gitlab.com/g/s/b/-/tree/" + sha + "/internal/tools"},
		{Web{Base: "https://bitbucket.org/a/b", Kind: KindBitbucket}, "https://bitbucket.org/a/b/src/" + sha + "/internal/tools/"},
		{Web{Base: "https://codeberg.org/a/b", Kind: KindGitea}, "https://codeberg.org/a/b/src/commit/" + sha + "/internal/tools"},
	}
	for _, tt := range tests {
		if got := tt.web.TreeLink(sha, "internal/tools"); got != tt.want {
			t.Errorf("%s TreeLink = %q, want %q", tt.web.Kind, got, tt.want)
		}
	}
}

// A checkout below the top of its repository cites its own paths; the
// links put its place in the repository before them.
func TestWebPrefix(t *testing.T) {
	w := Web{Base: "https://github.com/acme/app", Kind: KindGitHub, Prefix: "sub/dir/"}
	if got, want := w.Permalink("abc", "main.go", 3, 3), "https://github.com/acme/app/blob/abc/sub/dir/main.go#L3"; got != want {
		t.Errorf("Permalink = %q, want %q", got, want)
	}
	if got, want := w.TreeLink("abc", ""), "https://github.com/acme/app/tree/abc/sub/dir"; got != want {
		t.Errorf("TreeLink of the checkout = %q, want %q", got, want)
	}
}
