//go:build !linux

package handoff

import (
	"errors"
	"net"
)

// checkPeer cannot learn the peer's user here, so nothing is handed over.
func checkPeer(*net.UnixConn) error { return errors.ErrUnsupported }

// supported: the peer cannot be checked here; the service does not listen.
const supported = false
