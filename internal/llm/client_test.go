package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
)

var testTools = []ToolSpec{
	{Name: "list_files", Description: "List files.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`)},
}

func askRequest() Request {
	return Request{
		Messages: []Message{
			{Role: RoleSystem, Content: "You answer questions about a repository."},
			{Role: RoleUser, Content: "What does this repo do?"},
		},
		Tools: testTools,
	}
}

func TestStreamToolCalls(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []ToolCall
		// synthesized lists calls whose id the client must invent.
		synthesized []int
		wantFinish  string
	}{
		{
			name: "openai parallel calls split over many chunks",
			chunks: []string{
				llmtest.Chunk(`{"role":"assistant","content":null}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"list_files","arguments":""}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"."}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":""}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"path\":"}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"\"go.mod\"}"}}]}`, ""),
				llmtest.Chunk(`{}`, "tool_calls"),
			},
			want: []ToolCall{
				{ID: "call_a", Name: "list_files", Arguments: `{"path": "."}`},
				{ID: "call_b", Name: "read_file", Arguments: `{"path":"go.mod"}`},
			},
			wantFinish: "tool_calls",
		},
		{
			name: "ollama reuses index 0 with distinct ids and says stop",
			chunks: []string{
				llmtest.Chunk(`{"role":"assistant","content":"","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]}`, ""),
				llmtest.Chunk(`{"role":"assistant","content":"","tool_calls":[{"index":0,"id":"call_2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b.go\"}"}}]}`, ""),
				llmtest.Chunk(`{"role":"assistant","content":""}`, "stop"),
			},
			want: []ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.go"}`},
				{ID: "call_2", Name: "read_file", Arguments: `{"path":"b.go"}`},
			},
			wantFinish: "stop",
		},
		{
			name: "missing index: id starts a call, no id continues it, empty args become {}",
			chunks: []string{
				llmtest.Chunk(`{"tool_calls":[{"id":"c1","type":"function","function":{"name":"list_files","arguments":""}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"id":"c2","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"type":"function","function":{"arguments":"\"x\"}"}}]}`, ""),
				llmtest.Chunk(`{}`, "tool_calls"),
			},
			want: []ToolCall{
				{ID: "c1", Name: "list_files", Arguments: `{}`},
				{ID: "c2", Name: "read_file", Arguments: `{"path":"x"}`},
			},
			wantFinish: "tool_calls",
		},
		{
			name: "missing ids are synthesized",
			chunks: []string{
				llmtest.Chunk(`{"tool_calls":[{"index":0,"type":"function","function":{"name":"list_files","arguments":"{}"}}]}`, ""),
				llmtest.Chunk(`{"tool_calls":[{"index":1,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"y\"}"}}]}`, ""),
				llmtest.Chunk(`{}`, "tool_calls"),
			},
			want: []ToolCall{
				{Name: "list_files", Arguments: `{}`},
				{Name: "read_file", Arguments: `{"path":"y"}`},
			},
			synthesized: []int{0, 1},
			wantFinish:  "tool_calls",
		},
		{
			name: "openai stop with tool calls is still a tool turn",
			chunks: []string{
				llmtest.Chunk(`{"tool_calls":[{"index":0,"id":"call_s","type":"function","function":{"name":"list_files","arguments":"{\"path\":\"internal\"}"}}]}`, ""),
				llmtest.Chunk(`{}`, "stop"),
			},
			want:       []ToolCall{{ID: "call_s", Name: "list_files", Arguments: `{"path":"internal"}`}},
			wantFinish: "stop",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(llmtest.SSE(tt.chunks...)))
			c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = true })
			got, err := c.Complete(t.Context(), askRequest())
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			calls := got.Message.ToolCalls
			if len(calls) != len(tt.want) {
				t.Fatalf("got %d tool calls, want %d: %+v", len(calls), len(tt.want), calls)
			}
			seen := map[string]bool{}
			for _, i := range tt.synthesized {
				if !strings.HasPrefix(calls[i].ID, "call_") || len(calls[i].ID) < 10 {
					t.Errorf("call %d: synthesized id %q, want call_ and a random suffix", i, calls[i].ID)
				}
				if seen[calls[i].ID] {
					t.Errorf("call %d: synthesized id %q repeats", i, calls[i].ID)
				}
				seen[calls[i].ID] = true
				calls[i].ID = ""
			}
			if diff := cmp.Diff(tt.want, calls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if got.FinishReason != tt.wantFinish {
				t.Errorf("finish reason %q, want %q", got.FinishReason, tt.wantFinish)
			}
			if got.Message.Role != RoleAssistant {
				t.Errorf("role %q, want assistant", got.Message.Role)
			}
			body := f.Request(t, 0).Map(t)
			if body["stream"] != true {
				t.Errorf("request stream = %v, want true", body["stream"])
			}
			if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
				t.Errorf("request stream_options = %v, want include_usage true", body["stream_options"])
			}
		})
	}
}

func TestAccumulatorRepeatedIDWithoutIndex(t *testing.T) {
	// Some proxies repeat the id on every fragment and send no index.
	var a toolCallAccumulator
	a.add(openaiDelta(nil, "x1", "read_file", `{"path":`))
	a.add(openaiDelta(nil, "x1", "", `"a"}`))
	a.add(openaiDelta(nil, "x2", "read_file", `{"path":"b"}`))
	want := []ToolCall{
		{ID: "x1", Name: "read_file", Arguments: `{"path":"a"}`},
		{ID: "x2", Name: "read_file", Arguments: `{"path":"b"}`},
	}
	if diff := cmp.Diff(want, a.finish()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name  string
		usage string
		want  Usage
	}{
		{
			name:  "openai cached tokens",
			usage: `{"prompt_tokens":2048,"completion_tokens":12,"total_tokens":2060,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}`,
			want:  Usage{PromptTokens: 2048, CachedPromptTokens: 1920, CompletionTokens: 12},
		},
		{
			name:  "deepseek cache hit tokens only",
			usage: `{"prompt_tokens":900,"completion_tokens":30,"total_tokens":930,"prompt_cache_hit_tokens":640,"prompt_cache_miss_tokens":260}`,
			want:  Usage{PromptTokens: 900, CachedPromptTokens: 640, CompletionTokens: 30},
		},
		{
			name:  "ollama reports no cache",
			usage: `{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55}`,
			want:  Usage{PromptTokens: 50, CompletionTokens: 5},
		},
		{
			name:  "negative counts are none",
			usage: `{"prompt_tokens":-50,"completion_tokens":-5,"total_tokens":-55,"prompt_tokens_details":{"cached_tokens":-3}}`,
			want:  Usage{},
		},
		{
			name:  "counts that would overflow a sum are capped",
			usage: `{"prompt_tokens":9223372036854775807,"completion_tokens":9223372036854775807,"total_tokens":1}`,
			want:  Usage{PromptTokens: 1 << 30, CompletionTokens: 1 << 30},
		},
		{
			name:  "more cached than sent is what was sent",
			usage: `{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55,"prompt_tokens_details":{"cached_tokens":900}}`,
			want:  Usage{PromptTokens: 50, CachedPromptTokens: 50, CompletionTokens: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/stream", func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(llmtest.SSE(
				llmtest.Chunk(`{"role":"assistant","content":"Hel"}`, ""),
				llmtest.Chunk(`{"content":"lo"}`, ""),
				llmtest.Chunk(`{}`, "stop"),
				llmtest.UsageChunk(tt.usage),
			)))
			c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = true })
			got, err := c.Complete(t.Context(), askRequest())
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if got.Message.Content != "Hello" || len(got.Message.ToolCalls) != 0 {
				t.Errorf("message %+v, want content Hello and no tool calls", got.Message)
			}
		})
		t.Run(tt.name+"/plain", func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"Hello"}`, "stop", tt.usage))))
			c, _ := newTestClient(t, f, nil)
			got, err := c.Complete(t.Context(), askRequest())
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if _, ok := f.Request(t, 0).Map(t)["stream_options"]; ok {
				t.Errorf("a non-streamed request carries stream_options")
			}
		})
	}
}

func TestReasoningRoundTrip(t *testing.T) {
	const reasoning = "The user wants an overview; list the root first."
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "plain"}[stream]
		t.Run(name, func(t *testing.T) {
			first := llmtest.JSON(200, llmtest.Completion(
				`{"role":"assistant","content":"","reasoning_content":"`+reasoning+`","tool_calls":[{"id":"call_r","type":"function","function":{"name":"list_files","arguments":"{\"path\":\".\"}"}}]}`,
				"tool_calls", `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`))
			if stream {
				first = llmtest.SSE(
					llmtest.Chunk(`{"role":"assistant","reasoning_content":"The user wants an overview; "}`, ""),
					llmtest.Chunk(`{"reasoning_content":"list the root first."}`, ""),
					llmtest.Chunk(`{"tool_calls":[{"index":0,"id":"call_r","type":"function","function":{"name":"list_files","arguments":"{\"path\":\".\"}"}}]}`, ""),
					llmtest.Chunk(`{}`, "tool_calls"),
					llmtest.UsageChunk(`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`),
				)
			}
			second := llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"It is a Go service."}`, "stop", `{"prompt_tokens":30,"completion_tokens":6,"total_tokens":36}`))
			if stream {
				second = llmtest.SSE(llmtest.Chunk(`{"role":"assistant","content":"It is a Go service."}`, "stop"))
			}
			f := llmtest.New(t, llmtest.Queue(first, second))
			c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = stream })

			req := askRequest()
			resp, err := c.Complete(t.Context(), req)
			if err != nil {
				t.Fatalf("first Complete: %v", err)
			}
			if resp.Message.Reasoning != reasoning {
				t.Fatalf("reasoning %q, want %q", resp.Message.Reasoning, reasoning)
			}
			req.Messages = append(req.Messages, resp.Message,
				Message{Role: RoleTool, ToolCallID: "call_r", Content: "README.md\ncmd/\n"})
			if _, err := c.Complete(t.Context(), req); err != nil {
				t.Fatalf("second Complete: %v", err)
			}

			msgs, _ := f.Request(t, 1).Map(t)["messages"].([]any)
			if len(msgs) != 4 {
				t.Fatalf("second request has %d messages, want 4", len(msgs))
			}
			asst := msgs[2].(map[string]any)
			if asst["reasoning_content"] != reasoning {
				t.Errorf("assistant message sent back with reasoning_content %v, want %q", asst["reasoning_content"], reasoning)
			}
			calls, _ := asst["tool_calls"].([]any)
			if len(calls) != 1 || calls[0].(map[string]any)["id"] != "call_r" {
				t.Errorf("assistant tool_calls sent back as %v", asst["tool_calls"])
			}
			tool := msgs[3].(map[string]any)
			if tool["role"] != "tool" || tool["tool_call_id"] != "call_r" {
				t.Errorf("tool message sent as %v", tool)
			}
		})
	}
}

func TestTemperature(t *testing.T) {
	zero, warm := float32(0), float32(0.7)
	tests := []struct {
		name    string
		temp    *float32
		present bool
		check   func(float64) bool
	}{
		{"unset leaves the server default", nil, false, nil},
		{"zero is sent, not omitted", &zero, true, func(v float64) bool { return v > 0 && v < 1e-30 }},
		{"other values are sent as is", &warm, true, func(v float64) bool { return math.Abs(v-0.7) < 1e-6 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"ok"}`, "stop", `{}`))))
			c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Temperature = tt.temp })
			if _, err := c.Complete(t.Context(), askRequest()); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			v, ok := f.Request(t, 0).Map(t)["temperature"]
			if ok != tt.present {
				t.Fatalf("temperature present = %v (%v), want %v", ok, v, tt.present)
			}
			if ok && !tt.check(v.(float64)) {
				t.Errorf("temperature = %v", v)
			}
		})
	}
}

func TestMaxTokensField(t *testing.T) {
	tests := []struct{ model, field string }{
		{"deepseek-chat", "max_tokens"},
		{"gpt-5-mini", "max_completion_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"ok"}`, "stop", `{}`))))
			c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Model, cfg.MaxTokens = tt.model, 512 })
			if _, err := c.Complete(t.Context(), askRequest()); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got := f.Request(t, 0).Map(t)[tt.field]; got != float64(512) {
				t.Errorf("%s = %v, want 512 (body %s)", tt.field, got, f.Requests()[0].Body)
			}
		})
	}
}

func TestRequestBytesAreStable(t *testing.T) {
	f := llmtest.New(t, llmtest.Queue(llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"ok"}`, "stop", `{}`))))
	c, _ := newTestClient(t, f, nil)
	req := askRequest()
	req.Messages = append(req.Messages,
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "list_files", Arguments: ""}, {ID: "b", Name: "read_file", Arguments: `{"path":"x"}`}}},
		Message{Role: RoleTool, ToolCallID: "a", Content: ""},
		Message{Role: RoleTool, ToolCallID: "b", Content: "1\tpackage x\n", IsError: false},
	)
	for range 3 {
		if _, err := c.Complete(t.Context(), req); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	reqs := f.Requests()
	for i := 1; i < len(reqs); i++ {
		if !bytes.Equal(reqs[0].Body, reqs[i].Body) {
			t.Fatalf("request %d differs from request 0:\n%s\n%s", i, reqs[0].Body, reqs[i].Body)
		}
	}
	body := f.Request(t, 0).Map(t)
	tools := body["tools"].([]any)
	if len(tools) != 2 || tools[0].(map[string]any)["function"].(map[string]any)["name"] != "list_files" {
		t.Errorf("tools not sent in the given order: %v", tools)
	}
	msgs := body["messages"].([]any)
	args := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"]
	if args != "{}" {
		t.Errorf("empty arguments sent as %q, want {}", args)
	}
	if msgs[3].(map[string]any)["content"] != "(no output)" {
		t.Errorf("empty tool result sent as %v, want (no output)", msgs[3])
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization header %q", got)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	tests := []struct {
		name   string
		header string
		min    time.Duration
	}{
		{"retry-after-ms", "Retry-After-Ms: 250", 250 * time.Millisecond},
		{"retry-after seconds", "Retry-After: 1", time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(
				llmtest.JSON(429, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`, tt.header),
				llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"done"}`, "stop", `{}`)),
			))
			// RetryBase is 1ms: without honouring the header the retry
			// would come almost at once.
			c, logs := newTestClient(t, f, func(cfg *ClientConfig) { cfg.RetryMax = 5 * time.Second })
			got, err := c.Complete(t.Context(), askRequest())
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got.Message.Content != "done" {
				t.Errorf("content %q", got.Message.Content)
			}
			reqs := f.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d attempts, want 2", len(reqs))
			}
			if gap := reqs[1].At.Sub(reqs[0].At); gap < tt.min {
				t.Errorf("retried after %v, want at least %v", gap, tt.min)
			}
			if !strings.Contains(logs.String(), "retrying") {
				t.Errorf("no retry logged:\n%s", logs)
			}
		})
	}
}

func TestRetryAfterLongerThanRetryMaxGivesUp(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   time.Duration
		says   string
	}{
		{"two minutes", "Retry-After: 120", 2 * time.Minute, "asked to wait 2m0s"},
		// Values past a Duration's range must not wrap to a negative wait
		// that retries at once.
		{"1e300 seconds", "Retry-After: 1e300", RetryAfterForever, "unreasonably long"},
		{"more seconds than a Duration holds", "Retry-After: 99999999999999", RetryAfterForever, "unreasonably long"},
		{"infinite", "Retry-After: Inf", RetryAfterForever, "unreasonably long"},
		{"not a number", "Retry-After: NaN", RetryAfterForever, "unreasonably long"},
		{"1e300 milliseconds", "Retry-After-Ms: 1e300", RetryAfterForever, "unreasonably long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(llmtest.JSON(429, `{"error":{"message":"slow down"}}`, tt.header)))
			c, _ := newTestClient(t, f, nil)
			_, err := c.Complete(t.Context(), askRequest())
			var apiErr *APIError
			if !errors.As(err, &apiErr) || !errors.Is(err, ErrRateLimited) {
				t.Fatalf("err = %v, want *APIError matching ErrRateLimited", err)
			}
			if apiErr.RetryAfter != tt.want || apiErr.Attempts != 1 || len(f.Requests()) != 1 {
				t.Errorf("RetryAfter %v, Attempts %d, requests %d; want %v, 1, 1", apiErr.RetryAfter, apiErr.Attempts, len(f.Requests()), tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error does not report the wait (%q): %v", tt.says, err)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name     string
		reply    llmtest.Reply
		stream   bool
		base     string // the base URL's path; default /v1
		kind     error
		attempts int // requests the server should see (MaxRetries is 3)
		status   int
		says     []string
		not      []string // advice that would mislead here
	}{
		{
			name:     "500s then the typed error",
			reply:    llmtest.JSON(500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`),
			kind:     ErrUnavailable,
			attempts: 4,
			status:   500,
			says:     []string{"answered 500 after 4 attempts", "check the server or try again", "server had an error"},
		},
		{
			name:     "503 html from a proxy",
			reply:    llmtest.HTML(503, "<html><title>503 Service Temporarily Unavailable</title></html>"),
			kind:     ErrUnavailable,
			attempts: 4,
			status:   503,
			says:     []string{"503 Service Temporarily Unavailable"},
		},
		{
			name:     "408 is retried",
			reply:    llmtest.JSON(408, `{"error":{"message":"request timeout"}}`),
			kind:     ErrUnavailable,
			attempts: 4,
			status:   408,
		},
		{
			name:     "429 until the end",
			reply:    llmtest.JSON(429, `{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`),
			kind:     ErrRateLimited,
			attempts: 4,
			status:   429,
			says:     []string{"429 (rate limited) after 4 attempts", "try again"},
		},
		{
			name:     "429 out of quota is not retried",
			reply:    llmtest.JSON(429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`),
			kind:     ErrRateLimited,
			attempts: 1,
			status:   429,
			says:     []string{"out of quota"},
		},
		{
			name:     "400 is not retried",
			reply:    llmtest.JSON(400, `{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error"}}`),
			kind:     ErrBadRequest,
			attempts: 1,
			status:   400,
			says:     []string{"rejected the request (400)", "Invalid parameter", `"test-model"`},
		},
		{
			name:     "400 context length exceeded says the conversation is too long",
			reply:    llmtest.JSON(400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
			kind:     ErrBadRequest,
			attempts: 1,
			status:   400,
			says:     []string{"rejected the request (400)", "conversation is too long", "BOT_CONTEXT_BUDGET", "new thread"},
			not:      []string{"OPENAI_MODEL", "tool calling"},
		},
		{
			name:     "400 from vLLM with only the message says the conversation is too long",
			reply:    llmtest.JSON(400, `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens in the messages.","type":"BadRequestError","param":null,"code":400}`),
			kind:     ErrBadRequest,
			attempts: 1,
			status:   400,
			says:     []string{"conversation is too long", "BOT_CONTEXT_BUDGET"},
			not:      []string{"OPENAI_MODEL"},
		},
		{
			name:     "404 unknown model is not retried",
			reply:    llmtest.JSON(404, `{"error":{"message":"model \"test-model\" not found, try pulling it first","type":"api_error"}}`),
			kind:     ErrBadRequest,
			attempts: 1,
			status:   404,
			says:     []string{"not found", "OPENAI_MODEL"},
			not:      []string{"OPENAI_BASE_URL"},
		},
		{
			name:     "404 unknown model from vLLM",
			reply:    llmtest.JSON(404, `{"object":"error","message":"The model `+"`test-model`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`),
			kind:     ErrBadRequest,
			attempts: 1,
			status:   404,
			says:     []string{"does not exist", "OPENAI_MODEL"},
			not:      []string{"OPENAI_BASE_URL"},
		},
		{
			name:     "404 from a base URL without /v1 blames the URL, not the model",
			base:     "/",
			reply:    llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"unreachable"}`, "stop", `{}`)),
			kind:     ErrBadRequest,
			attempts: 1,
			status:   404,
			says:     []string{"wrong path /chat/completions", "check OPENAI_BASE_URL", "usually ends in /v1"},
			not:      []string{"OPENAI_MODEL", "model name"},
		},
		{
			name:     "404 invalid URL from OpenAI blames the URL",
			reply:    llmtest.JSON(404, `{"error":{"message":"Invalid URL (POST /chat/completions)","type":"invalid_request_error","param":null,"code":null}}`),
			kind:     ErrBadRequest,
			attempts: 1,
			status:   404,
			says:     []string{"Invalid URL", "check OPENAI_BASE_URL", "usually ends in /v1"},
			not:      []string{"OPENAI_MODEL"},
		},
		{
			name:     "404 html page blames the URL",
			reply:    llmtest.HTML(404, "<html><head><title>404 Not Found</title></head><body><center>nginx</center></body></html>"),
			kind:     ErrBadRequest,
			attempts: 1,
			status:   404,
			says:     []string{"404 Not Found", "check OPENAI_BASE_URL", "usually ends in /v1"},
			not:      []string{"OPENAI_MODEL"},
		},
		{
			name:     "401 echoing the key",
			reply:    llmtest.JSON(401, `{"error":{"message":"Incorrect API key provided: `+testKey+`. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`),
			kind:     ErrAuth,
			attempts: 1,
			status:   401,
			says:     []string{"rejected the credentials (401)", "OPENAI_API_KEY", "[redacted]"},
		},
		{
			name:     "200 with an html page is not a chat completion",
			reply:    llmtest.HTML(200, "<!doctype html><html>login</html>"),
			kind:     ErrUnavailable,
			attempts: 1,
			status:   200,
			says:     []string{"answered with an HTML page, not the API", "check OPENAI_BASE_URL"},
			not:      []string{"invalid character", "try again"},
		},
		{
			name:     "200 with an html page while streaming is not a chat completion",
			reply:    llmtest.HTML(200, "<html><head><title>Welcome to nginx!</title></head><body>hi</body></html>\n"),
			stream:   true,
			kind:     ErrUnavailable,
			attempts: 1,
			status:   200,
			says:     []string{"answered with an HTML page, not the API", `"Welcome to nginx!"`, "check OPENAI_BASE_URL"},
			not:      []string{"stream ended", "try again"},
		},
		{
			name:     "200 with a whole completion while streaming says the server does not stream",
			reply:    llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"hi"}`, "stop", `{}`)),
			stream:   true,
			kind:     ErrUnavailable,
			attempts: 1,
			status:   200,
			says:     []string{`"application/json"`, "not an event stream", "OPENAI_STREAM=false", "OPENAI_BASE_URL"},
			not:      []string{"stream ended", "try again"},
		},
		{
			name:     "event stream cut before its first event is retried",
			reply:    llmtest.CutSSE(),
			stream:   true,
			kind:     ErrUnavailable,
			attempts: 4,
			says:     []string{"stream ended before the model finished"},
			not:      []string{"OpenAI-compatible"},
		},
		{
			name:     "stream cut before finishing is retried",
			reply:    llmtest.CutSSE(llmtest.Chunk(`{"role":"assistant","content":"Hal"}`, "")),
			stream:   true,
			kind:     ErrUnavailable,
			attempts: 4,
			says:     []string{"stream ended before the model finished"},
		},
		{
			name:     "error event inside the stream is retried",
			reply:    llmtest.SSE(llmtest.Chunk(`{"role":"assistant","content":""}`, ""), `{"error":{"message":"worker overloaded","type":"server_error"}}`),
			stream:   true,
			kind:     ErrUnavailable,
			attempts: 4,
			says:     []string{"worker overloaded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(tt.reply))
			c, logs := newTestClient(t, f, func(cfg *ClientConfig) {
				cfg.Stream = tt.stream
				if tt.base != "" {
					cfg.BaseURL = f.Root() + tt.base
				}
			})
			_, err := c.Complete(t.Context(), askRequest())
			if err == nil {
				t.Fatal("Complete succeeded, want an error")
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.kind)
			}
			for _, other := range []error{ErrRateLimited, ErrUnavailable, ErrAuth, ErrBadRequest} {
				if other != tt.kind && errors.Is(err, other) {
					t.Errorf("err also matches %v", other)
				}
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err is %T, want *APIError", err)
			}
			if got := len(f.Requests()); got != tt.attempts || apiErr.Attempts != tt.attempts {
				t.Errorf("server saw %d requests, error says %d attempts; want %d", got, apiErr.Attempts, tt.attempts)
			}
			if apiErr.StatusCode != tt.status {
				t.Errorf("StatusCode %d, want %d", apiErr.StatusCode, tt.status)
			}
			host := f.Host()
			msg := err.Error()
			for _, s := range append(tt.says, host) {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not say %q", msg, s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(msg, s) {
					t.Errorf("error %q says %q", msg, s)
				}
			}
			if strings.Contains(msg, testKey) || strings.Contains(logs.String(), testKey) {
				t.Errorf("API key leaked:\nerror: %s\nlogs: %s", msg, logs)
			}
		})
	}
}

func TestUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here now
	c, err := NewClient(ClientConfig{BaseURL: "http://" + addr + "/v1", Model: "m", APIKey: testKey, RetryBase: time.Millisecond, RetryMax: 2 * time.Millisecond, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(t.Context(), askRequest())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want *APIError matching ErrUnavailable", err)
	}
	if apiErr.Attempts != 3 || apiErr.StatusCode != 0 {
		t.Errorf("Attempts %d StatusCode %d, want 3 and 0", apiErr.Attempts, apiErr.StatusCode)
	}
	if !strings.Contains(err.Error(), "OPENAI_BASE_URL") || !strings.Contains(err.Error(), addr) {
		t.Errorf("error does not point at the base URL: %v", err)
	}
}

func TestRetryThenSuccessAfterBrokenStream(t *testing.T) {
	f := llmtest.New(t, llmtest.Queue(
		llmtest.CutSSE(llmtest.Chunk(`{"role":"assistant","content":"par"}`, "")),
		llmtest.SSE(llmtest.Chunk(`{"role":"assistant","content":"whole answer"}`, "stop")),
	))
	c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = true })
	got, err := c.Complete(t.Context(), askRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Message.Content != "whole answer" {
		t.Errorf("content %q, want the retried answer only", got.Message.Content)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	f := llmtest.New(t, llmtest.Queue(llmtest.JSON(503, `{"error":{"message":"overloaded"}}`, "Retry-After: 20")))
	c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.RetryMax = time.Minute })
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Complete(ctx, askRequest())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// The server asked for 20s; returning well before that shows the
	// backoff sleep watches ctx.
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("returned after %v, the backoff ignored cancellation", waited)
	}
	if n := len(f.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestDeadlineShorterThanWaitGivesUpWithCause(t *testing.T) {
	f := llmtest.New(t, llmtest.Queue(llmtest.JSON(503, `{"error":{"message":"overloaded"}}`, "Retry-After: 20")))
	c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.RetryMax = time.Minute })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := c.Complete(ctx, askRequest())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable rather than a later deadline error", err)
	}
}

func TestTruncated(t *testing.T) {
	tests := []struct {
		name    string
		reply   llmtest.Reply
		stream  bool
		wantErr bool
	}{
		{"plain length with nothing", llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":""}`, "length", `{}`)), false, true},
		{"stream length with nothing", llmtest.SSE(llmtest.Chunk(`{"role":"assistant","reasoning_content":"thinking…"}`, ""), llmtest.Chunk(`{}`, "length")), true, true},
		{"length with partial text is returned", llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"The repo is"}`, "length", `{}`)), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(tt.reply))
			c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = tt.stream; cfg.MaxTokens = 64 })
			got, err := c.Complete(t.Context(), askRequest())
			if !tt.wantErr {
				if err != nil || got.FinishReason != "length" {
					t.Fatalf("got %+v, %v; want the partial answer with finish reason length", got, err)
				}
				return
			}
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("err = %v, want ErrTruncated", err)
			}
			if !strings.Contains(err.Error(), "64 tokens") {
				t.Errorf("error does not name the limit: %v", err)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (truncation is not retried)", n)
			}
		})
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	slow := llmtest.Reply{Hang: true}
	f := llmtest.New(t, llmtest.Queue(slow, llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"ok"}`, "stop", `{}`))))
	c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.AttemptTimeout = 100 * time.Millisecond })
	got, err := c.Complete(t.Context(), askRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Message.Content != "ok" || len(f.Requests()) != 2 {
		t.Errorf("content %q after %d requests; want ok after 2", got.Message.Content, len(f.Requests()))
	}
}

func TestNewClientValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  ClientConfig
		says []string
	}{
		{"no model", ClientConfig{}, []string{"model name is empty"}},
		{"bad scheme", ClientConfig{Model: "m", BaseURL: "localhost:11434/v1"}, []string{"needs http:// or https://"}},
		{"everything wrong at once", ClientConfig{BaseURL: "ftp://x", MaxTokens: -1, Temperature: ptr(float32(3))}, []string{"model name", "ftp://x", "max tokens", "temperature"}},
		{"credentials in the URL are not echoed", ClientConfig{Model: "m", BaseURL: "ftp://user:hunter2@host/v1"}, []string{"ftp://host/v1"}},
		{"a token as the user name is not echoed", ClientConfig{Model: "m", BaseURL: "ftp://hunter2@host/v1?api-key=hunter2"}, []string{"ftp://host/v1?…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(tt.cfg)
			if err == nil {
				t.Fatal("NewClient accepted the config")
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the URL password: %v", err)
			}
		})
	}
	c, err := NewClient(ClientConfig{Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	if c.ModelName() != "gpt-4o-mini" || c.host != "api.openai.com" {
		t.Errorf("ModelName %q host %q", c.ModelName(), c.host)
	}
}

// A transport error names the URL it failed on; net/http masks only its
// password, so a token given as the URL's user name or as a query value
// (https://TOKEN@host/v1, ?api-key=…) would be in the error the terminal
// prints and the log keeps.
func TestTransportErrorHidesURLCredentials(t *testing.T) {
	// Nothing listens on a port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, base := range []string{
		"http://tok-user-1234@" + addr + "/v1",
		"http://user:tok-pass-1234@" + addr + "/v1",
		"http://" + addr + "/v1?api-key=tok-query-1234",
	} {
		c, err := NewClient(ClientConfig{Model: "m", BaseURL: base, APIKey: testKey, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(t.Context(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s: err = %v, want an unavailable *APIError", base, err)
		}
		if strings.Contains(err.Error(), "tok-") || strings.Contains(apiErr.Message, "tok-") {
			t.Errorf("%s: error shows a credential: %v", base, err)
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: error does not name the server: %v", base, err)
		}
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After": "2", "Retry-After-Ms": "1234"}, 1234 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
		{"negative infinity", map[string]string{"Retry-After": "-Inf"}, 0},
		{"seconds past a Duration", map[string]string{"Retry-After": "1e300"}, RetryAfterForever},
		{"not a number", map[string]string{"Retry-After": "NaN"}, RetryAfterForever},
		{"milliseconds past a Duration", map[string]string{"Retry-After-Ms": "+Inf"}, RetryAfterForever},
		{"just under the limit", map[string]string{"Retry-After": "9000000000"}, 9_000_000_000 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tt.want {
				t.Errorf("retryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBackoffIsBoundedAndJittered(t *testing.T) {
	c := &Client{cfg: ClientConfig{RetryBase: 100 * time.Millisecond, RetryMax: time.Second}}
	for n := 1; n <= 40; n++ {
		d := c.backoff(n)
		ceil := min(100*time.Millisecond<<min(n-1, 30), time.Second)
		if d < ceil/2 || d > ceil {
			t.Errorf("backoff(%d) = %v, want within [%v, %v]", n, d, ceil/2, ceil)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestConcurrentUse(t *testing.T) {
	f := llmtest.New(t, llmtest.Queue(llmtest.SSE(
		llmtest.Chunk(`{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"list_files","arguments":"{}"}}]}`, ""),
		llmtest.Chunk(`{}`, "tool_calls"),
		llmtest.UsageChunk(`{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}`),
	)))
	c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = true })
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			r, err := c.Complete(t.Context(), askRequest())
			if err == nil && (len(r.Message.ToolCalls) != 1 || r.Usage.PromptTokens != 3) {
				err = errors.New("wrong response")
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkStreamedAnswer measures a 400-chunk streamed answer with two
// parallel tool calls end to end through a local server.
func BenchmarkStreamedAnswer(b *testing.B) {
	chunks := []string{llmtest.Chunk(`{"role":"assistant","content":""}`, "")}
	for i := range 200 {
		chunks = append(chunks, llmtest.Chunk(`{"content":"word `+string(rune('a'+i%26))+` "}`, ""))
	}
	for i := range 100 {
		idx := string(rune('0' + i%2))
		chunks = append(chunks, llmtest.Chunk(`{"tool_calls":[{"index":`+idx+`,"function":{"arguments":""}}]}`, ""))
	}
	chunks = append(chunks,
		llmtest.Chunk(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]}`, ""),
		llmtest.Chunk(`{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"y\"}"}}]}`, ""),
		llmtest.Chunk(`{}`, "tool_calls"),
		llmtest.UsageChunk(`{"prompt_tokens":3000,"completion_tokens":400,"total_tokens":3400,"prompt_tokens_details":{"cached_tokens":2048}}`))
	f := llmtest.New(b, llmtest.Queue(llmtest.SSE(chunks...)))
	c, _ := newTestClient(b, f, func(cfg *ClientConfig) { cfg.Stream = true })
	req := askRequest()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// vLLM with continuous usage stats puts usage on every chunk, so usage alone
// must not make a stream cut halfway look finished: it is retried.
func TestCutStreamWithUsageOnEveryChunkIsRetried(t *testing.T) {
	usage := `,"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`
	first := `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"The retry policy is in "}}]` + usage
	f := llmtest.New(t, llmtest.Queue(
		llmtest.CutSSE(first),
		llmtest.SSE(llmtest.Chunk(`{"role":"assistant","content":"whole answer"}`, "stop")),
	))
	c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = true })
	got, err := c.Complete(t.Context(), askRequest())
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.Content != "whole answer" {
		t.Errorf("a cut stream was accepted as the answer: %q", got.Message.Content)
	}
}

// A server that answers with more than any chat completion (a content
// string that never ends, an event stream that never stops) is cut off
// at maxResponseBody instead of being read into memory, and not retried.
func TestFloodingAnswerIsCutOff(t *testing.T) {
	const flood = 24 << 20 // over the 16 MiB limit
	endless := llmtest.JSON(http.StatusOK, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`+
		strings.Repeat("a", flood)+`"},"finish_reason":"stop"}]}`)
	event := llmtest.Chunk(`{"content":"`+strings.Repeat("a", 4000)+`"}`, "")
	endlessStream := llmtest.SSE(slices.Repeat([]string{event}, flood/len(event)+1)...)
	for _, tt := range []struct {
		name   string
		reply  llmtest.Reply
		stream bool
	}{{"json", endless, false}, {"stream", endlessStream, true}} {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(tt.reply))
			c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = tt.stream })
			_, err := c.Complete(t.Context(), askRequest())
			var apiErr *APIError
			if !errors.As(err, &apiErr) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want an unavailable *APIError", err)
			}
			if !strings.Contains(err.Error(), "larger than 16 MiB") || apiErr.Attempts != 1 {
				t.Errorf("err = %v (%d attempts), want one attempt cut off for its size", err, apiErr.Attempts)
			}
		})
	}
}
