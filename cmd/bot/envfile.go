package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/repos"
)

// chooseEnv layers a .env file under the process environment env: the
// one --env-file names, or else ./.env, but only when the working
// directory is not inside a repository being answered about. A checkout
// is someone else's files: its .env could set OPENAI_BASE_URL (or
// SLACK_API_URL, or BOT_CONFIG) and receive the user's API key with the
// first request. Which repositories are answered about is decided with
// and without the .env, since a hostile one would point REPO_PATH
// elsewhere to pass the check; a .env left out is named on notice with
// the way to use it anyway.
func chooseEnv(env func(string) (string, bool), given map[string]string, envFile string, notice io.Writer) (func(string) (string, bool), error) {
	if envFile != "" {
		dot, err := config.DotEnv(envFile)
		if err != nil {
			return nil, fmt.Errorf("--env-file: %w", err)
		}
		return config.Over(env, dot), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return env, nil // nowhere to look
	}
	path := filepath.Join(wd, ".env")
	dot, err := config.DotEnv(path)
	if errors.Is(err, fs.ErrNotExist) {
		return env, nil
	}
	roots := answeredRoots(env, given)
	if err == nil {
		roots = append(roots, answeredRoots(config.Over(env, dot), given)...)
	}
	for _, root := range roots {
		if within(root, wd) {
			fmt.Fprintf(notice, "bot: not reading %s: it is inside %s, a repository being answered about, whose files may be anyone's and could send your API key elsewhere; to use it anyway: --env-file %s\n", path, root, path)
			return env, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return config.Over(env, dot), nil
}

// answeredRoots returns the top directories of the local checkouts the
// settings in env would answer about (REPO_PATH, or the repos of
// BOT_CONFIG, as newCore picks them) and of the clones of url repos.
// Problems are left for the start to report: a setting that does not
// parse keeps its default here.
func answeredRoots(env func(string) (string, bool), given map[string]string) []string {
	cfg, _ := config.Load(env, given)
	from := repos.FromConfig
	if _, ok := given["REPO_PATH"]; ok {
		from = repos.PathOnly
	}
	specs, _ := from(cfg)
	if len(specs) == 0 {
		specs = []repos.Spec{{Path: cfg.RepoPath}}
	}
	var roots []string
	for _, s := range specs {
		dir := s.Path
		if dir == "" {
			dir = filepath.Join(cfg.DataDir, "repos", s.Name)
		}
		roots = append(roots, checkoutRoot(dir))
	}
	return roots
}

// checkoutRoot is the top of the git work tree holding dir (the nearest
// directory with a .git), or dir itself outside one, absolute and with
// symbolic links resolved. It looks for .git without running git, which
// would read the repository's own configuration.
func checkoutRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for d := abs; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs
		}
		d = parent
	}
}

// within reports whether dir is root or below it.
func within(root, dir string) bool {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
