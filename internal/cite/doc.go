// Package cite keeps the code citations in an answer honest before it is
// posted: it finds the path:line references a model writes, checks each one
// against the checkout at the turn's commit, turns the ones that exist into
// permalinks to the repository's web view at that commit, and flags the ones
// that do not (a hallucinated file, a line past the end) so that a reader
// never follows a link to code that is not there.
//
// The model is told to cite as path:line or path:start-end (see the agent's
// system prompt); Find also accepts the other spellings models use
// (path#L10, path:L10-L20, `path` lines 10-20, Go's file.go:12:5) and bare
// paths in inline code. Fenced code blocks are never read or changed.
//
// The package imports no other internal package but three leaves: gitexec,
// which runs its git, mdscan, whose reading of Markdown's code spans,
// fences and links the Slack renderer shares, so that a citation is never
// found in what Slack shows as code, and ctxio, which stops a count of a
// file's lines when the check's context ends. Callers hand it a Checker
// (GitChecker over a repository at a fixed commit, FSChecker over a plain
// directory) and a Web view derived from the remote or from configuration.
// All functions are safe for concurrent use; GitChecker and FSChecker are too.
package cite
