package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are stamped at build time:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse HEAD)" ./cmd/bot
//
// Left empty, they come from what the go command records in the binary: the
// module version (a tag, or a pseudo-version from the commit) and the
// checkout's revision, so a plain go build in a checkout is stamped too.
var (
	version string
	commit  string
)

// versionLine is "bot VERSION, commit COMMIT[ (modified)], GOVERSION".
func versionLine() string {
	ver, rev, modified := version, commit, false
	if info, ok := debug.ReadBuildInfo(); ok {
		if ver == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			ver = info.Main.Version
		}
		if rev == "" {
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
		}
	}
	if ver == "" {
		ver = "devel"
	}
	if rev == "" {
		rev = "unknown"
	}
	if modified {
		rev += " (modified)"
	}
	return fmt.Sprintf("bot %s, commit %s, %s", ver, rev, runtime.Version())
}

func printVersion(w io.Writer) {
	fmt.Fprintln(w, versionLine())
}
