package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/tools"
)

// defaultToolTimeout bounds a tool call when Options.ToolTimeout is 0; it
// is the agent's own default.
const defaultToolTimeout = 30 * time.Second

// repoArg is the argument every repository tool takes on top of its own.
const repoArg = "repo"

// readOnly tells clients that a tool changes nothing and reads only what
// askrepo holds, so they may call it without asking.
var readOnly = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}

// addRepoTools adds the agent's tools (tools.Default), each with the
// repo argument, for a.
func (s *Server) addRepoTools(srv *sdk.Server, a *access) {
	for _, d := range tools.NewRegistry(tools.Default(nil, tools.Options{})...).Definitions() {
		srv.AddTool(&sdk.Tool{
			Name:        d.Name,
			Description: d.Description,
			InputSchema: withRepo(d.Parameters, a),
			Annotations: readOnly,
		}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return s.serve(ctx, a, d.Name, func(ctx context.Context) (*sdk.CallToolResult, string, error) {
				return s.runTool(ctx, a, d.Name, req.Params.Arguments)
			}), nil
		})
	}
}

// withRepo is a tool's parameter schema with the repo argument added:
// required when a may read more than one repository, and naming those.
func withRepo(params json.RawMessage, a *access) json.RawMessage {
	var schema map[string]any
	if err := json.Unmarshal(params, &schema); err != nil {
		panic(fmt.Sprintf("mcp: a tool's schema does not decode: %v", err)) // a programming error
	}
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		schema["properties"] = props
	}
	if _, taken := props[repoArg]; taken {
		panic(fmt.Sprintf("mcp: a tool has an argument named %q, which MCP gives every tool to name the repository", repoArg))
	}
	props[repoArg] = map[string]any{"type": "string", "description": repoDescription(a)}
	if len(a.repos) > 1 {
		req, _ := schema["required"].([]any)
		schema["required"] = append(req, repoArg)
	}
	out, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("mcp: a tool's schema does not encode: %v", err))
	}
	return out
}

func repoDescription(a *access) string {
	if len(a.repos) == 1 {
		return fmt.Sprintf("The repository to read; optional: the only one is %s.", a.repos[0])
	}
	return "The repository to read, one of: " + strings.Join(a.repos, ", ") + "."
}

// splitRepo takes the repo argument out of a call's arguments and gives
// back the rest, as the tool itself reads them.
func splitRepo(args json.RawMessage) (repo string, rest json.RawMessage, err error) {
	var obj map[string]json.RawMessage
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		return "", json.RawMessage("{}"), nil
	}
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return "", nil, fmt.Errorf("the arguments must be one JSON object")
	}
	if raw, ok := obj[repoArg]; ok {
		if err := json.Unmarshal(raw, &repo); err != nil {
			return "", nil, fmt.Errorf("repo must be a string naming a repository")
		}
		delete(obj, repoArg)
	}
	rest, err = json.Marshal(obj)
	return repo, rest, err
}

// runTool runs one repository tool: over a lease on the repository the
// call names, at one commit, in the same registry and with the same
// timeout as the agent's calls.
func (s *Server) runTool(ctx context.Context, a *access, name string, args json.RawMessage) (*sdk.CallToolResult, string, error) {
	repo, input, err := splitRepo(args)
	if err != nil {
		return nil, "", refuse(err)
	}
	if repo, err = a.resolve(repo); err != nil {
		return nil, "", refuse(err)
	}
	lease, err := s.acquire(ctx, a, repo)
	if err != nil {
		return nil, repo, err
	}
	defer lease.Release()
	reg := tools.NewRegistry(tools.Default(lease.Workspace, tools.Options{Index: lease.Index})...)
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.opts.ToolTimeout, defaultToolTimeout))
	defer cancel()
	res := reg.Run(ctx, tools.Call{ID: "mcp", Name: name, Input: input})
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Content}}, IsError: res.IsError}, repo, nil
}
