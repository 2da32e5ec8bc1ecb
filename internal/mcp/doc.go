// Package mcp is askrepo's one adapter to the Model Context Protocol, in
// both directions: it serves the repository tools and the whole agent to
// other MCP clients, and it offers the tools of MCP servers a team already
// runs to askrepo's own agent. It is the only package that imports the
// official Go SDK, so the protocol's types stop here.
package mcp
