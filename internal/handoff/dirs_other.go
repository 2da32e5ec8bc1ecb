//go:build !linux

package handoff

import (
	"errors"
	"os"
)

// Listen refuses before these are called where the peer's user cannot be
// checked (supported is false); they exist so the package builds there.

func steadyDir(string) error { return errors.ErrUnsupported }

func openLock(string) (*os.File, error) { return nil, errors.ErrUnsupported }

func privateDir(string) error { return errors.ErrUnsupported }
