package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/tools"
)

// Limits on what one server may put in front of the model: each tool's
// definition is sent with every request of every turn, so a server that
// lists thousands of tools, or a description of megabytes, would crowd
// out the conversation.
const (
	maxToolsPerServer = 64
	maxDescription    = 2048
	maxSchema         = 16 << 10
)

// ToolSeparator joins a server's name and its tool's name into the name the
// model calls: tickets__search. Server names cannot hold it.
const ToolSeparator = "__"

// callableNameRE is what the OpenAI-compatible APIs accept as a function name.
var callableNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// remoteTool is one tool of an MCP server, as the agent's tools.Tool.
type remoteTool struct {
	srv      *upstream
	remote   string // the server's name for it
	def      tools.Definition
	readOnly bool
}

var _ tools.Tool = (*remoteTool)(nil)

func (t *remoteTool) Definition() tools.Definition { return t.def }

// Run calls the tool on its server. The agent bounds it with the tool
// timeout and the registry cuts its output to the limit; a server that is
// down, hangs or dies in the call gives an error the model can read.
func (t *remoteTool) Run(ctx context.Context, input json.RawMessage) (tools.Output, error) {
	var args map[string]any
	if raw := bytes.TrimSpace(input); len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return tools.Output{}, errors.New("the arguments must be a JSON object matching the tool's parameters")
		}
	}
	cs, err := t.srv.session()
	if err != nil {
		return tools.Output{}, err
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			// The agent says the call timed out, or was stopped; the
			// server may be stuck rather than slow.
			t.srv.suspect()
			return tools.Output{}, ctx.Err()
		}
		t.srv.suspect()
		if t.srv.oversize.Swap(false) {
			return tools.Output{}, fmt.Errorf("the %s server's result was larger than %d bytes, askrepo's limit, so it was not read; ask it for less, with narrower arguments",
				t.srv.spec.Name, t.srv.opts.maxResponse)
		}
		return tools.Output{}, fmt.Errorf("the %s server failed this call (%s); it is being checked and restarted if needed: try again later or go on without it",
			t.srv.spec.Name, t.srv.cred.line(err.Error()))
	}
	text := t.srv.cred.scrub(callText(res))
	if res.IsError {
		return tools.Output{}, fmt.Errorf("%s", strings.TrimSpace(firstText(text, "the tool reported an error without a message")))
	}
	return tools.Text(text), nil
}

// callText is what the model reads of a result: its text, a note for
// each part it cannot read (an image, audio, a binary resource), and the
// structured content when there is no text.
func callText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.URI+":\n"+c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[binary resource %s left out]", c.Resource.URI))
			}
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image (%s) left out]", c.MIMEType))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio (%s) left out]", c.MIMEType))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// pickTools turns a server's listing into the tools offered to the model:
// the ones the allow-list names when it has one, else the ones the server
// marks read-only; sorted by name, so the same listing always gives the
// same bytes. What cannot be offered is logged and left out.
func pickTools(srv *upstream, listed []*sdk.Tool, log *slog.Logger) []*remoteTool {
	allow := srv.spec.Tools
	var out []*remoteTool
	seen := map[string]bool{}
	for _, lt := range listed {
		ro := lt.Annotations != nil && lt.Annotations.ReadOnlyHint
		if len(allow) > 0 && !slices.Contains(allow, lt.Name) || len(allow) == 0 && !ro {
			continue
		}
		name := srv.spec.Name + ToolSeparator + lt.Name
		if !callableNameRE().MatchString(name) || seen[name] {
			log.Warn("MCP tool left out: its name is not one a model can call, or is listed twice", "tool", srv.cred.line(lt.Name))
			continue
		}
		schema, err := remoteSchema(lt.InputSchema, srv.cred)
		if err != nil {
			log.Warn("MCP tool left out", "tool", srv.cred.line(lt.Name), "err", err)
			continue
		}
		seen[name] = true
		out = append(out, &remoteTool{srv: srv, remote: lt.Name, readOnly: ro, def: tools.Definition{
			Name:        name,
			Description: clipBytes(srv.cred.scrub(firstText(lt.Description, lt.Title, lt.Name)), maxDescription),
			Parameters:  schema,
		}})
	}
	slices.SortFunc(out, func(a, b *remoteTool) int { return strings.Compare(a.def.Name, b.def.Name) })
	if len(out) > maxToolsPerServer {
		log.Warn("MCP server offers too many tools; the rest are left out", "offered", len(out), "kept", maxToolsPerServer)
		out = out[:maxToolsPerServer]
	}
	for _, name := range allow {
		if !slices.ContainsFunc(out, func(t *remoteTool) bool { return t.remote == name }) {
			log.Warn("a tool named in mcp_servers tools is not offered by the server", "tool", name)
		}
	}
	return out
}

// remoteSchema is the tool's input schema as the model gets it. The SDK
// decodes it into maps, which encoding/json writes with sorted keys: the
// same schema gives the same bytes at every listing.
func remoteSchema(s any, cred credentials) (json.RawMessage, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("its input schema does not encode: %w", err)
	}
	if len(b) > maxSchema {
		return nil, fmt.Errorf("its input schema takes %d bytes, over the %d allowed", len(b), maxSchema)
	}
	if scrubbed := cred.scrub(string(b)); scrubbed != string(b) {
		return nil, errors.New("its input schema holds a credential sent to the server")
	}
	if err := objectSchema(b); err != nil {
		return nil, err
	}
	return b, nil
}

// objectSchema checks that a schema is one of an object's, as the model
// API wants a function's parameters: it refuses the whole request
// otherwise, and every request of a turn carries every tool offered.
func objectSchema(b []byte) error {
	var s struct {
		Type       any             `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   json.RawMessage `json:"required"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("its input schema is not a JSON object")
	}
	if s.Type != "object" {
		return errors.New(`its input schema's type is not "object"`)
	}
	var props map[string]json.RawMessage
	if len(s.Properties) > 0 && json.Unmarshal(s.Properties, &props) != nil {
		return errors.New("its input schema's properties are not an object")
	}
	var req []string
	if len(s.Required) > 0 && json.Unmarshal(s.Required, &req) != nil {
		return errors.New("its input schema's required is not a list of names")
	}
	return nil
}

// flatLine is s on one line, cut to a length a log line or an error keeps.
func flatLine(s string) string {
	return clipBytes(strings.Join(strings.Fields(s), " "), 300)
}

// clipBytes cuts s to at most n bytes, at a rune boundary, marking the cut.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func firstText(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
