package llm

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
)

type heard struct {
	Attempt int
	Text    string
}

// textRecorder is a TextFunc that keeps what it hears.
type textRecorder struct {
	mu  sync.Mutex
	got []heard
}

func (r *textRecorder) hear(attempt int, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, heard{attempt, text})
}

// A listener hears a streamed reply's text as it arrives, piece by piece,
// with the attempt it belongs to, so it can start over when a broken
// stream is retried; reasoning and tool calls are not text.
func TestWithTextHearsTheStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies []llmtest.Reply
		stream  bool
		want    []heard
	}{
		{
			name: "text as it arrives",
			replies: []llmtest.Reply{llmtest.SSE(
				llmtest.Chunk(`{"role":"assistant","reasoning_content":"thinking"}`, ""),
				llmtest.Chunk(`{"content":"Back"}`, ""),
				llmtest.Chunk(`{"content":"off doubles."}`, ""),
				llmtest.Chunk(`{}`, "stop"),
			)},
			stream: true,
			want:   []heard{{1, "Back"}, {1, "off doubles."}},
		},
		{
			name: "a broken stream is heard again from its retry",
			replies: []llmtest.Reply{
				llmtest.CutSSE(llmtest.Chunk(`{"role":"assistant","content":"Hal"}`, "")),
				llmtest.SSE(llmtest.Chunk(`{"role":"assistant","content":"Hello"}`, ""), llmtest.Chunk(`{}`, "stop")),
			},
			stream: true,
			want:   []heard{{1, "Hal"}, {2, "Hello"}},
		},
		{
			name:    "tool calls are not text",
			replies: []llmtest.Reply{llmtest.SSE(llmtest.Chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"list_files","arguments":"{}"}}]}`, ""), llmtest.Chunk(`{}`, "tool_calls"))},
			stream:  true,
		},
		{
			name:    "without streaming nothing is heard",
			replies: []llmtest.Reply{llmtest.JSON(200, llmtest.Completion(`{"role":"assistant","content":"whole"}`, "stop", `{}`))},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := llmtest.New(t, llmtest.Queue(tc.replies...))
			c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = tc.stream })
			var rec textRecorder
			if _, err := c.Complete(WithText(t.Context(), rec.hear), askRequest()); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff(tc.want, rec.got); diff != "" {
				t.Errorf("heard (-want +got):\n%s", diff)
			}
		})
	}
}

// Without a listener, streaming works as before.
func TestWithTextIsOptional(t *testing.T) {
	f := llmtest.New(t, llmtest.Queue(llmtest.SSE(llmtest.Chunk(`{"role":"assistant","content":"hi"}`, ""), llmtest.Chunk(`{}`, "stop"))))
	c, _ := newTestClient(t, f, func(cfg *ClientConfig) { cfg.Stream = true })
	resp, err := c.Complete(context.Background(), askRequest())
	if err != nil || resp.Message.Content != "hi" {
		t.Fatalf("Complete = %q, %v", resp.Message.Content, err)
	}
}
