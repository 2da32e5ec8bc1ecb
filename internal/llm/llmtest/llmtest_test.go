package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
)

func post(t *testing.T, ctx context.Context, url, key, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const ask = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
const askStream = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestServerAnswersAndRecords(t *testing.T) {
	s := llmtest.New(t, llmtest.Queue(
		llmtest.Reply{Content: "first", Calls: []llmtest.Call{{Name: "read_file", Args: `{"path":"a"}`}}},
		llmtest.Reply{Content: "hello world", Usage: &llmtest.Usage{Prompt: 7, Cached: 3, Output: 2}},
	), llmtest.WithKey("k"))

	_, body := post(t, t.Context(), s.URL+"/chat/completions", "k", ask)
	var c struct {
		Choices []struct {
			Message struct {
				Content   string
				ToolCalls []struct{ ID string } `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.Choices[0].Message.Content != "first" || c.Choices[0].FinishReason != "tool_calls" || c.Choices[0].Message.ToolCalls[0].ID != "call_1_0" {
		t.Errorf("plain reply %s (%v)", body, err)
	}

	_, body = post(t, t.Context(), s.URL+"/chat/completions", "k", askStream)
	var text strings.Builder
	var events []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
			var ch struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			_ = json.Unmarshal([]byte(d), &ch)
			for _, x := range ch.Choices {
				text.WriteString(x.Delta.Content)
			}
		}
	}
	if text.String() != "hello world" || events[len(events)-1] != "[DONE]" || !strings.Contains(events[len(events)-2], `"cached_tokens":3`) {
		t.Errorf("stream %q joined to %q", events, text.String())
	}

	if s.Count() != 2 || s.Request(t, 1).Chat.Stream != true || string(s.Request(t, 0).Body) != ask || s.Request(t, 0).LastUser() != "hi" {
		t.Errorf("recorded %+v", s.Requests())
	}
}

func TestServerFaults(t *testing.T) {
	s := llmtest.New(t, llmtest.Queue(
		llmtest.RateLimited("3"),
		llmtest.Reply{Status: 500},
		llmtest.HTML(200, "<html>login</html>"),
		llmtest.CutSSE(llmtest.Chunk(`{"content":"Hal"}`, "")),
		llmtest.Reply{Content: "Half an ans", Cut: true},
	), llmtest.WithKey("k"))
	for _, tc := range []struct {
		url, key, body string
		status         int
		says, header   string
	}{
		{s.Root() + "/chat/completions", "k", ask, 404, "wrong path /chat/completions", ""},
		{s.URL + "/chat/completions", "nope", ask, 401, "invalid_api_key", ""},
		{s.URL + "/chat/completions", "k", ask, 429, "Rate limit", "3"},
		{s.URL + "/chat/completions", "k", ask, 500, "scripted failure 500", ""},
		{s.URL + "/chat/completions", "k", ask, 200, "<html>login</html>", ""},
		{s.URL + "/chat/completions", "k", askStream, 200, `"Hal"`, ""},
		{s.URL + "/chat/completions", "k", askStream, 200, `"Half "`, ""},
	} {
		resp, body := post(t, t.Context(), tc.url, tc.key, tc.body)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.says) || resp.Header.Get("Retry-After") != tc.header {
			t.Errorf("%s with %q: %d %q Retry-After %q; want %d saying %q", tc.url, tc.key, resp.StatusCode, body, resp.Header.Get("Retry-After"), tc.status, tc.says)
		}
		if strings.Contains(body, "[DONE]") || strings.Contains(body, "finish_reason\":\"") {
			t.Errorf("a cut stream finished: %s", body)
		}
	}
}

func TestServerHangsUntilTheClientGoes(t *testing.T) {
	s := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Hang: true} })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/chat/completions", strings.NewReader(ask))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case n := <-s.Arrived():
		if n != 1 {
			t.Errorf("arrived %d, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request never arrived")
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("a hanging reply answered")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server kept the request after the client went away")
	}
}
