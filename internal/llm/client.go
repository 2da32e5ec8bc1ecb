package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
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
			resp.Attempts = attempt
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
		Model:        cr.Model,
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
