package repos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/askrepo/askrepo/internal/tools"
)

// Check finds what New would refuse in the environment and on disk (a
// path that is not a directory, a token_env or ssh_key_env variable that
// is not set, a deny pattern that does not parse, url repositories without
// a data directory) without opening, cloning or fetching anything, so a
// start can report these problems together with those of its settings and
// of the specs' shape. Specs that Validate refuses are checked as far as
// their shape allows. env nil is the process environment; knownHosts is
// Options.KnownHosts.
func Check(specs []Spec, dataDir, knownHosts string, env func(string) (string, bool)) error {
	if env == nil {
		env = os.LookupEnv
	}
	var errs []error
	for _, s := range specs {
		var problems []error
		switch {
		case s.Path != "" && s.URL == "":
			_, err := localDir(s.Path)
			problems = append(problems, err)
		case s.URL != "" && s.Path == "":
			_, err := newAuth(s, env, newHostKeys(knownHosts, dataDir))
			problems = append(problems, err)
			if dataDir == "" {
				problems = append(problems, errNoDataDir)
			}
		}
		problems = append(problems, checkDeny(s.Deny))
		for _, err := range problems {
			if err != nil {
				errs = append(errs, fmt.Errorf("repository %s: %w", s.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

var errNoDataDir = errors.New("url repositories need a data directory (BOT_DATA_DIR) to clone into")

// localDir is the absolute path of a local checkout, which must be a
// directory.
func localDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("path %s: %w", path, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("path %s is not a directory; point path (or REPO_PATH) at a checkout", abs)
	}
	return abs, nil
}

// checkDeny parses extra deny patterns as a workspace would.
func checkDeny(deny []string) error {
	if len(deny) == 0 {
		return nil
	}
	ws, err := tools.NewWorkspace(os.TempDir(), tools.WorkspaceOptions{Deny: deny})
	if err != nil {
		return fmt.Errorf("deny: %w", err)
	}
	ws.Close()
	return nil
}
