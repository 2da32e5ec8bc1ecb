package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

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
