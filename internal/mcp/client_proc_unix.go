//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup starts a stdio server in a process group of its own, so what
// it starts in turn (npx starts node, a script its program) ends with it
// rather than outliving every restart, and a Ctrl-C at the terminal
// reaches askrepo alone, which closes it.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// endGroup kills whatever is left of the server's process group once its
// own process has been closed.
func endGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
