// Package llm holds provider-neutral chat types (messages, tool calls, tool
// specs, usage) and the clients that speak them: an OpenAI-compatible client
// and a demo model that needs no credentials.
//
// It is the only package that imports go-openai; everything above it speaks
// these types, so a second provider never touches the agent or the Slack code.
// It must not import any other internal package.
package llm

import (
	"context"
	"encoding/json"
)

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation. The JSON form is our own storage
// format (history is persisted), not a wire format of any provider.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// Reasoning is DeepSeek's reasoning_content. Thinking-mode models reject a
	// follow-up request whose assistant tool-call messages lack it, so it is
	// kept in history and sent back as received.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a RoleTool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a tool result that reports a failure. OpenAI-compatible
	// APIs have no such flag; it is kept for observers and for storage.
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is one call the model asked for. Arguments is the raw JSON text the
// model produced; it may be invalid and is checked by the tool, not here.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolSpec is what the model is told about a tool.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Usage is what a request cost, as reported by the server. CachedPromptTokens
// is the part of PromptTokens served from the provider's prompt cache; zero
// means none or not reported (Ollama reports nothing).
type Usage struct {
	PromptTokens       int `json:"prompt_tokens"`
	CachedPromptTokens int `json:"cached_prompt_tokens"`
	CompletionTokens   int `json:"completion_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:       u.PromptTokens + o.PromptTokens,
		CachedPromptTokens: u.CachedPromptTokens + o.CachedPromptTokens,
		CompletionTokens:   u.CompletionTokens + o.CompletionTokens,
	}
}

// Request is one chat completion request. Tools may be empty, which asks the
// model for a final answer.
type Request struct {
	Messages []Message
	Tools    []ToolSpec
}

// Response is the model's reply: one assistant message. It is a tool turn if
// and only if Message.ToolCalls is non-empty (finish_reason is not trusted:
// several servers send "stop" with tool calls).
type Response struct {
	Message      Message
	Usage        Usage
	FinishReason string
	// Model is the model that answered, as the server names it (often a
	// dated version of the one asked for); empty when it does not say.
	Model string
	// Attempts is how many times the request was sent before this reply
	// (1 without retries); 0 from a model that does not say.
	Attempts int
}

// Model is anything that completes a chat: the OpenAI-compatible client and
// the demo model both satisfy it.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}
