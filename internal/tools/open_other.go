//go:build !unix

package tools

import "os"

// openFlags: outside Unix there are no FIFOs to block on in the same way.
const openFlags = os.O_RDONLY
