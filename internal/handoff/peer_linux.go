//go:build linux

package handoff

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// checkPeer returns nil when the process at the other end of c runs as
// this process's user: the kernel says so (SO_PEERCRED), not the peer.
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("read the peer's credentials: %w", credErr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("%w (uid %d)", ErrStranger, cred.Uid)
	}
	return nil
}

// supported: the peer can be checked here.
const supported = true
