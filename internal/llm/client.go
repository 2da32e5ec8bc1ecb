package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultBaseURL is OpenAI's API. Any OpenAI-compatible server works:
// DeepSeek (https://api.deepseek.com/v1), vLLM and llama.cpp
// (http://host:8000/v1), Ollama (http://host:11434/v1).
const DefaultBaseURL = "https://api.openai.com/v1"

// Defaults applied by NewClient to zero fields of ClientConfig.
const (
	DefaultMaxRetries     = 3
	DefaultRetryBase      = 500 * time.Millisecond
	DefaultRetryMax       = 30 * time.Second
	DefaultAttemptTimeout = 10 * time.Minute
)

// ClientConfig configures a Client. Only Model is required.
type ClientConfig struct {
	// BaseURL is the API root including /v1; empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token. Local servers (Ollama, llama.cpp)
	// need none; empty sends no Authorization header.
	APIKey string
	Model  string
	// Stream asks for server-sent events. The answer is still returned whole;
	// streaming keeps long generations from tripping idle timeouts of proxies,
	// lets usage arrive in the final chunk (stream_options.include_usage),
	// and lets a listener set with WithText show the text as it is written.
	Stream bool
	// Temperature nil leaves the server default. A zero value is sent as
	// math.SmallestNonzeroFloat32: go-openai's field is a float32 with
	// omitempty, so a literal 0 would silently vanish from the request and
	// the server would use its default (often 1), the opposite of what was
	// asked. Every server treats 1e-45 as greedy decoding.
	Temperature *float32
	// MaxTokens caps the output; 0 leaves the server default. It is sent as
	// max_tokens, which every compatible server understands, except for
	// OpenAI reasoning models (o1, o3, o4, gpt-5…) that only accept
	// max_completion_tokens.
	MaxTokens int
	// MaxRetries is how many times a retryable failure (429, 408, 5xx,
	// timeouts, connection errors, broken streams) is retried. 0 means
	// DefaultMaxRetries; negative means never retry.
	MaxRetries int
	// RetryBase and RetryMax bound the exponential backoff: the n-th retry
	// waits about RetryBase·2ⁿ⁻¹ (with jitter), at most RetryMax. A server's
	// Retry-After is honoured instead of the backoff; one longer than
	// RetryMax ends the retries, since waiting minutes inside a chat turn is
	// worse than telling the user.
	RetryBase, RetryMax time.Duration
	// AttemptTimeout bounds one attempt, streamed body included. A timed-out
	// attempt is retried. 0 means DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// HTTPClient is used for requests; nil means a client with a clone of
	// http.DefaultTransport. Its Transport is wrapped, not modified.
	HTTPClient *http.Client
	// Logger gets retries at Warn and each completion at Debug; nil discards.
	Logger *slog.Logger
}

// Client talks to an OpenAI-compatible chat completions API. It is safe for
// concurrent use; it holds no per-request state.
type Client struct {
	cfg  ClientConfig
	api  *openai.Client
	host string
	log  *slog.Logger
	// secrets are removed from every message: the API key, and the parts
	// of the base URL that can carry a credential (user, password, query
	// values, as in https://TOKEN@host/v1 or ?api-key=…).
	secrets []string
}

var _ Model = (*Client)(nil)

// NewClient checks cfg, fills defaults and returns a client. It does not
// contact the server.
func NewClient(cfg ClientConfig) (*Client, error) {
	var problems []error
	if strings.TrimSpace(cfg.Model) == "" {
		problems = append(problems, errors.New("model name is empty; set one (OPENAI_MODEL), e.g. gpt-4o-mini"))
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	switch {
	case err != nil:
		problems = append(problems, fmt.Errorf("base URL %q does not parse; use the API root such as %s", redactURL(cfg.BaseURL), DefaultBaseURL))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		problems = append(problems, fmt.Errorf("base URL %q needs http:// or https:// and a host, e.g. %s or http://localhost:11434/v1", redactURL(cfg.BaseURL), DefaultBaseURL))
	}
	if cfg.MaxTokens < 0 {
		problems = append(problems, fmt.Errorf("max tokens is %d; use 0 for the server default or a positive limit", cfg.MaxTokens))
	}
	if cfg.Temperature != nil && (*cfg.Temperature < 0 || *cfg.Temperature > 2) {
		problems = append(problems, fmt.Errorf("temperature %g is outside 0..2", *cfg.Temperature))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, fmt.Errorf("model client config: %w", err)
	}

	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.RetryMax < cfg.RetryBase {
		cfg.RetryMax = cfg.RetryBase
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultAttemptTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	httpClient := &http.Client{}
	if cfg.HTTPClient != nil {
		copied := *cfg.HTTPClient
		httpClient = &copied
	}
	base := httpClient.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	httpClient.Transport = captureTransport{base: base}

	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = httpClient

	return &Client{
		cfg:     cfg,
		api:     openai.NewClientWithConfig(oc),
		host:    u.Host,
		log:     log.With("component", "llm", "model", cfg.Model, "host", u.Host),
		secrets: urlSecrets(u, cfg.APIKey),
	}, nil
}

// ModelName is the configured model, for footers and logs.
func (c *Client) ModelName() string { return c.cfg.Model }

// errAttemptTimeout is the cause of an attempt's context when it ran out of
// AttemptTimeout, as opposed to the caller's context ending.
var errAttemptTimeout = errors.New("attempt timed out")

// errMalformed marks an answer that is not a chat completion (an HTML page
// from a wrong base URL, a body that is not JSON). Retrying will not help.
var errMalformed = errors.New("malformed answer")

// errBrokenStream marks a stream that ended before the model finished.
var errBrokenStream = errors.New("stream ended before the model finished")

// Complete sends one chat completion, retrying transient failures, and
// returns the assistant message. Failures after the last attempt are
// *APIError; ctx ending returns promptly with ctx's error (errors.Is
// context.Canceled or DeadlineExceeded).
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	creq, err := c.chatRequest(req)
	if err != nil {
		return Response{}, &APIError{Kind: ErrBadRequest, Host: c.host, Model: c.cfg.Model, Message: c.redact(err.Error())}
	}
	start := time.Now()
	onText := textFunc(ctx)
	for attempt := 1; ; attempt++ {
		x := &exchange{keepBody: !c.cfg.Stream, attempt: attempt, onText: onText}
		resp, err := c.once(ctx, creq, x)
		if err == nil {
			c.log.Debug("model completion",
				"attempts", attempt, "took", time.Since(start).Round(time.Millisecond),
				"tool_calls", len(resp.Message.ToolCalls), "finish_reason", resp.FinishReason,
				"prompt_tokens", resp.Usage.PromptTokens, "cached_tokens", resp.Usage.CachedPromptTokens,
				"completion_tokens", resp.Usage.CompletionTokens)
			return resp, nil
		}
		if errors.Is(err, ErrTruncated) {
			return Response{}, err
		}
		if ctx.Err() != nil {
			return Response{}, fmt.Errorf("model request to %s after %d attempt%s: %w", c.host, attempt, plural(attempt), context.Cause(ctx))
		}
		f := c.classify(err, x)
		giveUp := func() (Response, error) {
			return Response{}, &APIError{
				Kind: f.kind, Host: c.host, Model: c.cfg.Model, StatusCode: f.status,
				Attempts: attempt, Elapsed: time.Since(start), Message: f.message,
				RetryAfter: f.retryAfter, cause: f.cause, contextTooLong: f.tooLong, endpoint: f.endpoint,
			}
		}
		if !f.retryable || attempt > c.cfg.MaxRetries {
			return giveUp()
		}
		wait := f.retryAfter
		if wait == 0 {
			wait = c.backoff(attempt)
		} else if wait > c.cfg.RetryMax {
			return giveUp()
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// Sleeping past the caller's deadline only to be cancelled
			// would hide the real failure behind "context deadline".
			return giveUp()
		}
		c.log.Warn("model request failed; retrying",
			"attempt", attempt, "status", f.status, "wait", wait, "error", f.message)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{}, fmt.Errorf("model request to %s after %d attempt%s: %w", c.host, attempt, plural(attempt), context.Cause(ctx))
		case <-t.C:
		}
	}
}

// backoff is the wait before retry n (1-based): exponential from RetryBase,
// capped at RetryMax, with "equal jitter" (half fixed, half random) so many
// clients hit by the same outage do not return in lockstep.
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.RetryBase << min(n-1, 30)
	if d <= 0 || d > c.cfg.RetryMax {
		d = c.cfg.RetryMax
	}
	half := d / 2
	return half + rand.N(half+1)
}

// once is one attempt, bounded by AttemptTimeout.
func (c *Client) once(ctx context.Context, creq openai.ChatCompletionRequest, x *exchange) (Response, error) {
	actx, cancel := context.WithTimeoutCause(ctx, c.cfg.AttemptTimeout, errAttemptTimeout)
	defer cancel()
	actx = withExchange(actx, x)
	var resp Response
	var err error
	if c.cfg.Stream {
		resp, err = c.streamOnce(actx, creq, x)
	} else {
		resp, err = c.plainOnce(actx, creq, x)
	}
	if err != nil && ctx.Err() == nil && context.Cause(actx) == errAttemptTimeout {
		return Response{}, errAttemptTimeout
	}
	return resp, err
}

func (c *Client) plainOnce(ctx context.Context, creq openai.ChatCompletionRequest, x *exchange) (Response, error) {
	cr, err := c.api.CreateChatCompletion(ctx, creq)
	if err != nil {
		if x.status == http.StatusOK && isDecodeError(err) {
			return Response{}, fmt.Errorf("%w: %v", errMalformed, err)
		}
		return Response{}, err
	}
	if len(cr.Choices) == 0 {
		return Response{}, fmt.Errorf("%w: the answer has no choices", errMalformed)
	}
	ch := cr.Choices[0]
	for _, cand := range cr.Choices {
		if cand.Index == 0 {
			ch = cand
			break
		}
	}
	// A complete message: every entry is its own call, whatever its id.
	var acc toolCallAccumulator
	for _, tc := range ch.Message.ToolCalls {
		acc.calls = append(acc.calls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	resp := Response{
		Message: Message{
			Role:      RoleAssistant,
			Content:   ch.Message.Content,
			Reasoning: ch.Message.ReasoningContent,
			ToolCalls: acc.finish(),
		},
		Usage:        usageFrom(&cr.Usage, x.body.Bytes()),
		FinishReason: string(ch.FinishReason),
	}
	return resp, c.checkTruncated(resp)
}

// checkTruncated turns an empty answer cut at the output limit into
// ErrTruncated: there is nothing to show and nothing to run.
func (c *Client) checkTruncated(r Response) error {
	if r.FinishReason == string(openai.FinishReasonLength) && strings.TrimSpace(r.Message.Content) == "" && len(r.Message.ToolCalls) == 0 {
		limit := "the server's default output limit"
		if c.cfg.MaxTokens > 0 {
			limit = fmt.Sprintf("the output limit of %d tokens", c.cfg.MaxTokens)
		}
		return fmt.Errorf("%w: model %s reached %s before writing an answer or a tool call (finish_reason \"length\"); raise the max tokens setting, or start a new thread so the history is shorter", ErrTruncated, c.cfg.Model, limit)
	}
	return nil
}

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
	return c.finish(f, x)
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

// chatRequest converts a Request to go-openai's. The same Request always
// gives byte-identical JSON (struct fields in declaration order, tool
// objects with sorted keys, parameters as compacted raw JSON), so the
// provider's prompt cache can match the prefix of the next turn.
func (c *Client) chatRequest(req Request) (openai.ChatCompletionRequest, error) {
	creq := openai.ChatCompletionRequest{
		Model:    c.cfg.Model,
		Messages: make([]openai.ChatCompletionMessage, 0, len(req.Messages)),
	}
	if c.cfg.Stream {
		creq.Stream = true
		creq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if t := c.cfg.Temperature; t != nil {
		creq.Temperature = *t
		if *t == 0 {
			creq.Temperature = math.SmallestNonzeroFloat32
		}
	}
	if c.cfg.MaxTokens > 0 {
		creq.MaxTokens = c.cfg.MaxTokens
		if errors.Is(openai.NewReasoningValidator().Validate(creq), openai.ErrReasoningModelMaxTokensDeprecated) {
			creq.MaxTokens, creq.MaxCompletionTokens = 0, c.cfg.MaxTokens
		}
	}
	for i, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content}
		switch m.Role {
		case RoleSystem, RoleUser:
		case RoleAssistant:
			om.ReasoningContent = m.Reasoning
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
					ID: tc.ID, Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: tc.Name, Arguments: args},
				})
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return creq, fmt.Errorf("message %d is a tool result without a tool call id", i)
			}
			om.ToolCallID = m.ToolCallID
			if om.Content == "" {
				// content is omitempty in go-openai, and a tool message
				// without content is rejected by OpenAI.
				om.Content = "(no output)"
			}
		default:
			return creq, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
		creq.Messages = append(creq.Messages, om)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(params) {
			return creq, fmt.Errorf("tool %s has parameters that are not valid JSON", t.Name)
		}
		creq.Tools = append(creq.Tools, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name: t.Name, Description: t.Description, Parameters: params,
			},
		})
	}
	if err := openai.NewReasoningValidator().Validate(creq); err != nil {
		return creq, err
	}
	return creq, nil
}

// usageFrom reads go-openai's usage, falling back to DeepSeek's
// prompt_cache_hit_tokens (which go-openai does not map) from the raw JSON
// when prompt_tokens_details.cached_tokens is absent.
func usageFrom(u *openai.Usage, raw []byte) Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CachedPromptTokens = u.PromptTokensDetails.CachedTokens
	}
	if out.CachedPromptTokens == 0 && bytes.Contains(raw, []byte(`"prompt_cache_hit_tokens"`)) {
		var ds struct {
			Usage struct {
				Hit int `json:"prompt_cache_hit_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(raw, &ds) == nil {
			out.CachedPromptTokens = ds.Usage.Hit
		}
	}
	// The server's numbers feed counters that cannot go down and sums
	// that must not overflow: a negative count is no count, and none is
	// over maxUsageTokens.
	out.PromptTokens = min(max(out.PromptTokens, 0), maxUsageTokens)
	out.CompletionTokens = min(max(out.CompletionTokens, 0), maxUsageTokens)
	out.CachedPromptTokens = min(max(out.CachedPromptTokens, 0), out.PromptTokens)
	return out
}

// maxUsageTokens is more tokens than any one request uses, by far.
const maxUsageTokens = 1 << 30
