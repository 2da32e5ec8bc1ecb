package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinels for branching on why a model call failed. An *APIError matches
// exactly one of the first four with errors.Is.
var (
	// ErrRateLimited: the server answered 429 (too many requests, or the
	// account is out of quota) on every attempt.
	ErrRateLimited = errors.New("model API rate limited the request")
	// ErrUnavailable: 5xx, 408, timeouts, connection failures, broken
	// streams, or an answer that is not a chat completion.
	ErrUnavailable = errors.New("model API unavailable")
	// ErrAuth: 401 or 403; retrying cannot help.
	ErrAuth = errors.New("model API rejected the credentials")
	// ErrBadRequest: any other 4xx, or a request the client library refused
	// to send; retrying the same request cannot help.
	ErrBadRequest = errors.New("model API rejected the request")
	// ErrTruncated: the model hit its output limit (finish_reason "length")
	// before producing any text or tool call, so there is nothing to use.
	ErrTruncated = errors.New("model output truncated")
)

// APIError is a failed model call after all attempts. Its text says what
// happened and what to do next, and never contains the API key: server
// messages are scrubbed of it before they are stored here.
type APIError struct {
	// Kind is one of ErrRateLimited, ErrUnavailable, ErrAuth, ErrBadRequest.
	Kind error
	// Host is the API host (no path, no credentials), for the reader to know
	// which server failed.
	Host  string
	Model string
	// StatusCode is the HTTP status of the last attempt; 0 when no HTTP
	// answer arrived (connection refused, timeout, broken stream).
	StatusCode int
	Attempts   int
	Elapsed    time.Duration
	// Message is the server's error message or the transport error, trimmed.
	Message string
	// RetryAfter is the wait the server asked for on the last attempt, if any.
	RetryAfter time.Duration

	// contextTooLong: the server rejected the prompt as longer than the
	// model's context window, which no model-name fix can help.
	contextTooLong bool
	// endpoint: what answered is not the chat completions API, which is
	// the base URL's fault whatever the status says.
	endpoint endpointProblem

	// cause is a transport or context error kept for errors.Is/As (for
	// example context.DeadlineExceeded); server error bodies are not kept,
	// because some echo the key.
	cause error
}

func (e *APIError) Error() string {
	var b strings.Builder
	host := e.Host
	if host == "" {
		host = "(unknown host)"
	}
	tries := fmt.Sprintf("after %d attempt%s over %s", e.Attempts, plural(e.Attempts), roundElapsed(e.Elapsed))
	msg := e.Message
	if msg != "" {
		msg = ": " + msg
	}
	if e.endpoint != endpointOK {
		e.endpoint.describe(&b, host, e.StatusCode, e.Message)
		return b.String()
	}
	switch {
	case errors.Is(e.Kind, ErrRateLimited):
		fmt.Fprintf(&b, "the model API at %s answered 429 (rate limited) %s%s", host, tries, msg)
		switch {
		case e.RetryAfter == RetryAfterForever:
			b.WriteString(" (it asked to wait an unreasonably long time)")
		case e.RetryAfter > 0:
			fmt.Fprintf(&b, " (it asked to wait %s)", roundElapsed(e.RetryAfter))
		}
		b.WriteString("; wait a minute and try again, or check the account's rate limits and quota")
	case errors.Is(e.Kind, ErrAuth):
		fmt.Fprintf(&b, "the model API at %s rejected the credentials (%d)%s; check the API key (OPENAI_API_KEY) and that it may use model %q", host, e.StatusCode, msg, e.Model)
	case errors.Is(e.Kind, ErrBadRequest):
		status := "locally"
		if e.StatusCode != 0 {
			status = fmt.Sprintf("(%d)", e.StatusCode)
		}
		if e.contextTooLong {
			fmt.Fprintf(&b, "the model API at %s rejected the request %s%s; the conversation is too long for model %q: lower BOT_CONTEXT_BUDGET so long threads are compacted sooner, or start a new thread", host, status, msg, e.Model)
			break
		}
		fmt.Fprintf(&b, "the model API at %s rejected the request %s%s; check the model name %q (OPENAI_MODEL) and that the server supports tool calling", host, status, msg, e.Model)
	default:
		if e.StatusCode != 0 {
			fmt.Fprintf(&b, "the model API at %s answered %d %s%s; check the server or try again", host, e.StatusCode, tries, msg)
		} else {
			fmt.Fprintf(&b, "the model API at %s failed %s%s; check the base URL (OPENAI_BASE_URL) and that the server is running, or try again", host, tries, msg)
		}
	}
	return b.String()
}

// Is makes errors.Is(err, ErrRateLimited) and friends work.
func (e *APIError) Is(target error) bool { return target == e.Kind }

// Unwrap returns the transport or context error behind the failure, if any.
func (e *APIError) Unwrap() error { return e.cause }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// roundElapsed keeps durations readable in messages: "9.2s", "150ms".
func roundElapsed(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// endpointProblem is how an answer shows that the base URL does not lead to
// an OpenAI-compatible API. Whatever the status, the fix is the same
// setting, so the message names it rather than the model or the server.
type endpointProblem int

const (
	endpointOK endpointProblem = iota
	// noEndpoint: 404 or 405 not about the model: there is no chat
	// completions route under the base URL.
	noEndpoint
	// htmlPage: a web page (a login portal, a web server's start page).
	htmlPage
	// notCompletion: a 200 that is neither a chat completion nor an event
	// stream of one.
	notCompletion
)

const baseURLAdvice = "check OPENAI_BASE_URL: it is the API root, which usually ends in /v1 (" + DefaultBaseURL + ", http://localhost:11434/v1)"

func (p endpointProblem) describe(b *strings.Builder, host string, status int, message string) {
	switch p {
	case noEndpoint:
		fmt.Fprintf(b, "the server at %s has no chat completions API under the base URL (%d", host, status)
		if message != "" {
			b.WriteString(": " + message)
		}
		b.WriteString("); " + baseURLAdvice)
	case htmlPage:
		fmt.Fprintf(b, "the server at %s answered with an HTML page, not the API", host)
		if message != "" {
			fmt.Fprintf(b, " (%q)", message)
		}
		b.WriteString("; " + baseURLAdvice)
	default:
		fmt.Fprintf(b, "the server at %s answered %d, but not with a chat completion (%s); %s", host, status, message, baseURLAdvice)
	}
}
