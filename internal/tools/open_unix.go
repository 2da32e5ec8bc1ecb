//go:build unix

package tools

import "syscall"

// openFlags opens without blocking: opening a FIFO for reading otherwise
// waits for a writer forever, and a device may block too. For regular files
// O_NONBLOCK changes nothing.
const openFlags = syscall.O_RDONLY | syscall.O_NONBLOCK
