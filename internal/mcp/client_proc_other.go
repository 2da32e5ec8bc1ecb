//go:build !unix

package mcp

import "os/exec"

// ownGroup and endGroup have no process groups to use here: a stdio
// server's own process is all that is closed.
func ownGroup(*exec.Cmd) {}

func endGroup(*exec.Cmd) {}
