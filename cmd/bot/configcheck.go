package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/repos"
)

// checkRepos finds the problems of the repositories a start would open:
// their shape in BOT_CONFIG and what they need from the environment and
// the disk, so they are reported with the settings' own instead of one
// round after another. loadErr is config.Load's: when it could not read
// BOT_CONFIG at all, that is said already.
func checkRepos(cfg config.Config, env func(string) (string, bool), pathOnly bool, loadErr error) error {
	if _, unreadable := errors.AsType[*fs.PathError](loadErr); unreadable && !pathOnly {
		return nil
	}
	from := repos.FromConfig
	if pathOnly {
		from = repos.PathOnly
	}
	specs, err := from(cfg)
	if len(specs) == 1 && specs[0].Path != "" && specs[0].URL == "" {
		if _, serr := os.Stat(specs[0].Path); errors.Is(serr, fs.ErrNotExist) {
			return errors.Join(err, missingRepo(specs[0].Path))
		}
	}
	return errors.Join(err, repos.Check(specs, cfg.DataDir, cfg.KnownHosts, env))
}

// configError lists every problem of a start, one to a line.
func configError(err error) error {
	var lines []string
	var flatten func(error)
	flatten = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				flatten(e)
			}
			return
		}
		lines = append(lines, err.Error())
	}
	flatten(err)
	if len(lines) == 1 {
		return fmt.Errorf("configuration: %s", lines[0])
	}
	return fmt.Errorf("configuration: %d problems:\n  %s", len(lines), strings.Join(lines, "\n  "))
}
