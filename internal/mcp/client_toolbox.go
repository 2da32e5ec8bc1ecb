package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/askrepo/askrepo/internal/tools"
)

// Toolbox is a turn's tools: askrepo's own, then the MCP servers' tools
// offered where the question was asked. It satisfies the agent's Toolbox,
// its ReadOnlyReporter and the turn's describer.
type Toolbox struct {
	base     *tools.Registry
	ext      *tools.Registry
	inExt    map[string]bool
	readOnly map[string]bool
	names    []string
}

// NewToolbox puts ext (from Clients.Tools) after base. The servers' tools
// run through a registry of their own with the same output limit as
// base's, so a huge result is cut as a built-in tool's would be, and a
// panic or an unknown name becomes a result the model can read.
func NewToolbox(base *tools.Registry, ext []tools.Tool, opts tools.RegistryOptions) *Toolbox {
	b := &Toolbox{base: base, ext: tools.NewRegistryWith(opts, ext...), inExt: map[string]bool{}, readOnly: map[string]bool{}}
	for _, t := range ext {
		name := t.Definition().Name
		b.inExt[name] = true
		rt, ok := t.(*remoteTool)
		b.readOnly[name] = ok && rt.readOnly
	}
	b.names = append(base.Names(), b.ext.Names()...)
	return b
}

// Definitions are base's, then the servers' sorted by name: the built-in
// part of the request prefix is the same with or without servers.
func (b *Toolbox) Definitions() []tools.Definition {
	return append(b.base.Definitions(), b.ext.Definitions()...)
}

// Run runs the call on the tools that have its name.
func (b *Toolbox) Run(ctx context.Context, call tools.Call) tools.Result {
	if b.inExt[call.Name] {
		return b.ext.Run(ctx, call)
	}
	if !strings.Contains(call.Name, ToolSeparator) {
		return b.base.Run(ctx, call) // its own tool, or its own word for an unknown one
	}
	return tools.Result{CallID: call.ID, Name: call.Name, IsError: true, Summary: "unknown tool",
		Content: fmt.Sprintf("unknown tool %q; the available tools are: %s", call.Name, strings.Join(b.names, ", "))}
}

// Describe is the short form of a call's arguments for a context line.
func (b *Toolbox) Describe(call tools.Call) string {
	if b.inExt[call.Name] {
		return b.ext.Describe(call)
	}
	return b.base.Describe(call)
}

// ReadOnly reports whether a call may run beside others of its step: a
// server's tool only when the server marks it read-only; one the
// allow-list offers anyway runs alone.
func (b *Toolbox) ReadOnly(name string) bool {
	if b.inExt[name] {
		return b.readOnly[name]
	}
	return true
}
