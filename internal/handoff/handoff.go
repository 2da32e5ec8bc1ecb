// Package handoff lets a one-shot command (bot tool) run a tool call in the
// service already running on the same data directory, over a unix socket
// that only the service's own user can use. The service holds the checkout,
// its listing, its secret blobs and its code index in memory, so the call
// costs a few milliseconds where a fresh process must open the repository,
// list it and map the index first; and the result is, by construction,
// what the service's model would see.
//
// Nothing is trusted beyond the socket's peer: both sides check that the
// other runs as the same user (SO_PEERCRED), the socket lives in a 0700
// directory of the data directory, and a request names what it depends on
// (Request.Key) so the service refuses one it would answer differently
// from a local run. Any failure, refusal or missing service means "run it
// yourself": a tool call is read-only, so running it twice loses nothing.
//
// It imports no other internal package but flock.
package handoff

import (
	"encoding/json"
	"errors"
	"path/filepath"
)

// Dir is the directory of the data directory that holds the socket and
// its lock; File is the socket.
const (
	Dir      = "run"
	File     = "tool.sock"
	lockFile = "tool.lock"
)

// maxPath is the longest socket path every unix takes (macOS: 104 bytes
// with the terminating NUL; Linux: 108).
const maxPath = 103

// maxRequest bounds a request: a tool call's arguments are small.
const maxRequest = 1 << 20

// Path is the socket's path for a data directory.
func Path(dataDir string) string { return filepath.Join(dataDir, Dir, File) }

// Request is one tool call for the service.
type Request struct {
	// Key says what the result depends on besides the checkout: the
	// repository's configuration, the settings of the tools, the build.
	// The service runs the call only for a repository whose key is the
	// same as the caller's.
	Key   string          `json:"key"`
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
}

// Response is the call's result, or why the service did not run it.
type Response struct {
	Content string `json:"content"`
	Summary string `json:"summary"`
	IsError bool   `json:"is_error"`
	// Refused, when not empty, says why the call was not run here; the
	// caller runs it itself.
	Refused string `json:"refused,omitempty"`
	// Progress, when not empty, is a line of progress (the service is
	// indexing for the call); the result follows in another Response.
	Progress string `json:"progress,omitempty"`
	// Accepted is the service's first answer to a call it runs, sent at
	// once, so that a caller can tell a live service from one that only
	// holds its socket; the result follows in another Response.
	Accepted bool `json:"accepted,omitempty"`
}

// ErrNoService is Call's answer when no service listens on the data
// directory (none runs, or it does not hand calls over).
var ErrNoService = errors.New("no service takes tool calls on this data directory")

// ErrStranger means the socket's other end runs as another user.
var ErrStranger = errors.New("the other end of the socket runs as another user")
