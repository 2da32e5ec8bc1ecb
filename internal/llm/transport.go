package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// go-openai turns a failed response into an error that carries the status
// and message but not the headers, so Retry-After would be lost. The client
// therefore wraps its transport: each attempt puts an *exchange in the
// request context, and the transport records what the server answered.

type exchangeKey struct{}

// exchange is what one attempt's HTTP response looked like. It is written by
// the transport and read by Complete in the same goroutine after the call
// returns (http.Client.Do runs RoundTrip synchronously).
type exchange struct {
	// keepBody asks for a copy of a successful body, so fields go-openai does
	// not map (DeepSeek's prompt_cache_hit_tokens) can be read. Only set for
	// non-streaming calls, whose bodies are one bounded JSON document; a
	// streaming call keeps the body only when it is not an event stream.
	keepBody bool

	// attempt numbers the tries of one request from 1; onText, when set,
	// hears a streamed reply's text (see WithText).
	attempt int
	onText  TextFunc

	status int
	header http.Header
	body   bytes.Buffer
}

func withExchange(ctx context.Context, x *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

// maxKeptBody bounds the copy of a response body kept for raw parsing. A
// chat completion is a few KB; anything larger is not copied.
const maxKeptBody = 4 << 20

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

type captureTransport struct {
	base http.RoundTripper
}

func (t captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	x, ok := req.Context().Value(exchangeKey{}).(*exchange)
	if !ok {
		return resp, nil
	}
	x.status = resp.StatusCode
	x.header = resp.Header.Clone()
	switch {
	case resp.StatusCode >= 300:
		// go-openai reads an error body but never closes it; read it here,
		// bounded, and close it, so the connection is always released.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
	case x.keepBody || !isEventStream(resp.Header):
		// A streaming request answered by something other than an event
		// stream is kept too, to say what it was (an HTML page's title).
		resp.Body = &teeBody{ReadCloser: resp.Body, dst: &x.body}
	}
	if resp.StatusCode < 300 {
		resp.Body = &capBody{ReadCloser: resp.Body, left: maxResponseBody}
	}
	return resp, nil
}

// maxResponseBody bounds a successful answer, streamed or not. A real one
// is far smaller (a reply is limited by the model's output tokens); a
// server that sends more, or never stops, would otherwise be read into
// memory, all of it, for as long as the attempt lasts.
const maxResponseBody = 16 << 20

// errBodyTooLarge ends the reading of an answer over maxResponseBody.
var errBodyTooLarge = errors.New("answer larger than 16 MiB")

// capBody fails reads past left bytes with errBodyTooLarge.
type capBody struct {
	io.ReadCloser
	left int64
}

func (c *capBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// teeBody copies what is read into dst until maxKeptBody.
type teeBody struct {
	io.ReadCloser
	dst *bytes.Buffer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 && t.dst.Len()+n <= maxKeptBody {
		t.dst.Write(p[:n])
	}
	return n, err
}

// retryAfter reads how long the server asks us to wait: OpenAI and Azure
// send retry-after-ms (milliseconds, more precise) next to the standard
// Retry-After (seconds or an HTTP date). Zero means no usable hint. A wait
// too long for a time.Duration (1e300, Inf, NaN) is RetryAfterForever, so
// the client gives up on it rather than overflowing to a negative wait and
// retrying at once.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && !(ms <= 0) {
			return durationOf(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return durationOf(secs, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// RetryAfterForever is APIError.RetryAfter when the server asked for a wait
// too long to represent (a Retry-After of 1e300 or NaN seconds).
const RetryAfterForever = time.Duration(math.MaxInt64)

// durationOf converts n units (n > 0 or NaN) to a Duration, saturating at
// RetryAfterForever. The check is made before the conversion: converting an
// out-of-range float to int64 gives an arbitrary, typically negative, value.
func durationOf(n float64, unit time.Duration) time.Duration {
	if math.IsNaN(n) || math.IsInf(n, 0) || n >= float64(RetryAfterForever)/float64(unit) {
		return RetryAfterForever
	}
	return time.Duration(n * float64(unit))
}
