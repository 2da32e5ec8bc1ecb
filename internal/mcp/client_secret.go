package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/askrepo/askrepo/internal/config"
)

// redactedText replaces a credential wherever a server's words would show it.
const redactedText = "[redacted]"

// credentials are one server's header values and environment values,
// looked up when it is connected. A server, or anything between askrepo
// and it, may echo what it was sent (an error quoting the request, a
// tool that reports its environment): every text that comes from the
// server on its way to the model, a log line or /healthz goes through
// scrub first.
type credentials struct {
	headers map[string]string // header → value
	env     []string          // KEY=value for a stdio server
	secrets []string          // longest first
}

// resolveCredentials looks up the variables spec names. A missing one was
// reported at start (config.Load); here it is just left out.
func resolveCredentials(spec config.MCPServer, env func(string) (string, bool)) credentials {
	c := credentials{headers: map[string]string{}}
	add := func(v string) {
		// A short value is no secret worth hiding, and redacting it
		// would garble every text it happens to appear in.
		if len(v) >= 4 {
			c.secrets = append(c.secrets, v)
		}
		// "Bearer abc…": the token alone is as secret as the header.
		for f := range strings.FieldsSeq(v) {
			if len(f) >= 8 && f != v {
				c.secrets = append(c.secrets, f)
			}
		}
	}
	for h, name := range spec.Headers {
		if v, ok := env(name); ok && v != "" {
			c.headers[h] = v
			add(v)
		}
	}
	for k, name := range spec.Env {
		if v, ok := env(name); ok {
			c.env = append(c.env, k+"="+v)
			add(v)
		}
	}
	slices.Sort(c.env)
	// Longest first, so a token inside a longer secret is not left half
	// shown by an earlier, shorter replacement.
	slices.SortFunc(c.secrets, func(a, b string) int { return len(b) - len(a) })
	c.secrets = slices.Compact(c.secrets)
	return c
}

// scrub replaces every credential in s, and its JSON-escaped form, which a
// server quoting a request would show.
func (c credentials) scrub(s string) string {
	for _, v := range c.secrets {
		s = strings.ReplaceAll(s, v, redactedText)
		if b, err := json.Marshal(v); err == nil {
			if q := string(b[1 : len(b)-1]); q != v {
				s = strings.ReplaceAll(s, q, redactedText)
			}
		}
	}
	return s
}

// line is s scrubbed, then on one line cut to what a log line or an
// error keeps; in that order, so a cut never leaves half a credential.
func (c credentials) line(s string) string { return flatLine(c.scrub(s)) }

// inheritedEnv are the variables of the service's own environment a stdio
// server gets. The service's environment holds the model's API key, the
// Slack tokens and the repositories' tokens; a server gets none of them,
// only what it needs to run a program and what its env entry names.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT"}

// childEnv is the environment of a stdio server.
func (c credentials) childEnv() []string {
	var out []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return append(out, c.env...)
}

// maxServerResponse bounds one HTTP response of a server, as the model's
// answers are bounded: the SDK reads a response whole, and a server
// could otherwise fill the service's memory.
const maxServerResponse = 16 << 20

// headerTransport adds a server's headers to every request sent to it,
// and bounds each response it reads to limit bytes.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	limit   int64
	// over is told of a response cut at the limit: the SDK drops the
	// read's error for its own, and the call's caller should know why.
	over func()
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && t.limit > 0 {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.limit, limit: t.limit, over: t.over}
	}
	return resp, err
}

// cappedBody fails a read past its limit rather than return more.
type cappedBody struct {
	io.ReadCloser
	left, limit int64
	over        func()
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if b.over != nil {
			b.over()
			b.over = nil
		}
		return 0, fmt.Errorf("the server's response is larger than %d bytes, askrepo's limit; it was not read on", b.limit)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// sameOrigin is the CheckRedirect of a server's HTTP client: a redirect is
// followed only within the server's own origin (scheme, host and port).
// headerTransport adds the credentials to every request the client
// sends, so a redirect elsewhere (a moved host, an open redirect) would
// hand them to whoever it names.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("stopped after %d redirects", len(via))
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("the server redirected to %s://%s, not its own origin; set its url to where it is now", req.URL.Scheme, req.URL.Host)
	}
	return nil
}
