package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// isDecodeError reports whether go-openai failed to decode an answer, as
// opposed to failing to get one.
func isDecodeError(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// failure is a classified attempt error.
type failure struct {
	kind       error
	status     int
	message    string
	retryable  bool
	retryAfter time.Duration
	cause      error
	// tooLong: the server said the prompt does not fit the model's
	// context window.
	tooLong bool
	// endpoint: the base URL does not lead to the API.
	endpoint endpointProblem
}

// contextTooLong reports whether a rejection says the prompt is over the
// model's context window: OpenAI's code, llama.cpp's type, and the
// wording OpenAI, vLLM and compatible servers put in the message.
func contextTooLong(code, typ, message string) bool {
	if code == "context_length_exceeded" || typ == "exceed_context_size_error" {
		return true
	}
	m := strings.ToLower(message)
	return strings.Contains(m, "maximum context length") || strings.Contains(m, "context_length_exceeded") ||
		strings.Contains(m, "exceeds the available context size")
}

// localErrors are refused by go-openai before anything is sent.
var localErrors = []error{
	openai.ErrChatCompletionInvalidModel,
	openai.ErrChatCompletionStreamNotSupported,
	openai.ErrContentFieldsMisused,
	openai.ErrReasoningModelMaxTokensDeprecated,
	openai.ErrReasoningModelLimitationsLogprobs,
	openai.ErrReasoningModelLimitationsOther,
	openai.ErrReasoningEffortUnsupported,
	openai.ErrReasoningSamplingUnsupported,
	openai.ErrReasoningToolsRequireResponses,
}

// classify sorts an attempt's error: its kind, the status and message to
// report, and whether it is worth another attempt.
func (c *Client) classify(err error, x *exchange) failure {
	f := failure{kind: ErrUnavailable, status: x.status}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &reqErr):
		// Checked first: it may wrap a partly decoded *openai.APIError
		// that lacks the status code.
		f.status = reqErr.HTTPStatusCode
		f.message = bodyText(reqErr.Body)
		if errors.As(reqErr.Err, &apiErr) && apiErr.Message != "" {
			f.message = apiErr.Message
		}
		if f.message == "" {
			f.message = http.StatusText(reqErr.HTTPStatusCode)
		}
		f.tooLong = contextTooLong("", "", f.message)
	case errors.As(err, &apiErr):
		f.status = apiErr.HTTPStatusCode
		f.message = apiErr.Message
		code, _ := apiErr.Code.(string)
		f.tooLong = contextTooLong(code, apiErr.Type, apiErr.Message)
		if apiErr.HTTPStatusCode == 0 {
			// An error event inside a 200 stream: the server failed
			// mid-generation (overload, worker crash). Worth a retry.
			f.message = "error event in the stream: " + apiErr.Message
			f.retryable = true
			f.status = 0
		}
		if code, _ := apiErr.Code.(string); code == "insufficient_quota" || apiErr.Type == "insufficient_quota" {
			// 429 for an exhausted account: waiting will not refill it.
			return c.finish(failure{kind: ErrRateLimited, status: f.status, message: f.message + " (the account is out of quota; check its billing)"}, x)
		}
	case errors.Is(err, errAttemptTimeout):
		f.message = fmt.Sprintf("no complete answer within %s", c.cfg.AttemptTimeout)
		f.retryable = true
		f.cause = context.DeadlineExceeded
		f.status = 0
		return c.finish(f, x)
	case errors.Is(err, errMalformed):
		return c.finish(malformed(f, err, x), x)
	case errors.Is(err, errBodyTooLarge):
		// Not retried: the same request would get the same flood.
		f.message = "the server sent an answer larger than 16 MiB, which no chat completion is; it was cut off"
		f.status = 0
		return c.finish(f, x)
	default:
		for _, le := range localErrors {
			if errors.Is(err, le) {
				f.kind, f.status, f.message = ErrBadRequest, 0, err.Error()
				return c.finish(f, x)
			}
		}
		// Transport failures: refused, reset, DNS, TLS, timeouts, a body
		// cut short, a stream that stopped early.
		f.message = transportMessage(err)
		f.cause = err
		f.status = 0
		var ne net.Error
		f.retryable = errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errBrokenStream) ||
			errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, openai.ErrTooManyEmptyStreamMessages) ||
			isConnError(err)
		return c.finish(f, x)
	}

	return c.finish(byStatus(f), x)
}

// byStatus sorts a failure the server answered with an HTTP status: what
// kind of error it is, and whether another attempt can help.
func byStatus(f failure) failure {
	if noRoute(f.status, f.message) {
		f.endpoint = noEndpoint
	}
	switch s := f.status; {
	case s == 0:
	case s == http.StatusTooManyRequests:
		f.kind, f.retryable = ErrRateLimited, true
	case s == http.StatusRequestTimeout || s >= 500:
		f.kind, f.retryable = ErrUnavailable, true
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		f.kind = ErrAuth
	case s >= 400:
		f.kind = ErrBadRequest
	default:
		f.tooLong = false
	}
	return f
}

// malformed describes a 200 that is not a chat completion: a web page, by
// its title, or whatever else it was.
func malformed(f failure, err error, x *exchange) failure {
	f.endpoint, f.message = notCompletion, strings.TrimPrefix(err.Error(), errMalformed.Error()+": ")
	if isHTML(x.header, x.body.Bytes()) {
		f.endpoint, f.message = htmlPage, htmlTitle(x.body.Bytes())
	}
	return f
}

// finish adds the server's Retry-After and scrubs the message.
func (c *Client) finish(f failure, x *exchange) failure {
	if f.status != 0 && f.status == x.status {
		f.retryAfter = retryAfter(x.header, time.Now())
	}
	f.message = c.redact(oneLine(f.message, 300))
	return f
}

// isConnError reports errors a *url.Error wraps when the connection itself
// failed, for platforms where they do not satisfy net.Error.
func isConnError(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// redact removes the API key and the base URL's credentials from text that
// came from a server or a transport: some servers echo the key they
// rejected.
func (c *Client) redact(s string) string {
	for _, k := range c.secrets {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return s
}

// urlSecrets lists what redact removes: the key and the credentials the
// base URL carries. Values shorter than 4 bytes are left out; replacing
// them would garble messages and they protect nothing.
func urlSecrets(u *url.URL, key string) []string {
	out := []string{key}
	if u.User != nil {
		out = append(out, u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	out = slices.DeleteFunc(out, func(s string) bool { return len(s) < 4 })
	// Longest first, so a secret that contains another goes whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// transportMessage is a transport error's text with its URL shown as
// redactURL shows it. net/http masks only a URL's password: the user (often
// a token, https://TOKEN@host) and the query (?api-key=…) would reach logs
// and the terminal as they are.
func transportMessage(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err.Error()
	}
	shown := *ue
	shown.URL = redactURL(ue.URL)
	return strings.Replace(err.Error(), ue.Error(), shown.Error(), 1)
}

// bodyText makes a non-JSON error body (an HTML page from a proxy, plain
// text from a local server) readable in one line.
func bodyText(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if strings.HasPrefix(s, "<") {
		if t := htmlTitle(b); t != "" {
			return t
		}
		return "an HTML page"
	}
	return s
}

// htmlTitle is the <title> of an HTML page, or "".
func htmlTitle(b []byte) string {
	s := string(b)
	if i := strings.Index(strings.ToLower(s), "<title>"); i >= 0 {
		rest := s[i+len("<title>"):]
		if j := strings.Index(strings.ToLower(rest), "</title>"); j >= 0 {
			return strings.TrimSpace(rest[:j])
		}
	}
	return ""
}

// isHTML reports whether a response is a web page: by its Content-Type,
// or, without one, by its first character.
func isHTML(h http.Header, body []byte) bool {
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil {
		return mt == "text/html" || mt == "application/xhtml+xml"
	}
	return bytes.HasPrefix(bytes.TrimSpace(body), []byte("<"))
}

// noRoute reports whether a 404 or 405 says the route is missing, most
// often a base URL without its /v1: a server that knows the route names
// the model it cannot find (OpenAI, Ollama, vLLM all do).
func noRoute(status int, message string) bool {
	return (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) &&
		!strings.Contains(strings.ToLower(message), "model")
}

// oneLine collapses whitespace and cuts s to at most n bytes on a rune
// boundary.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// redactURL shows a URL in messages without what can carry a credential:
// the user information and the query go ("?…" marks that there was one).
// URL.Redacted hides only the password, and a token is as often the user
// name or a query value.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable)"
	}
	u.User = nil
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = "…", false
	}
	return u.String()
}
