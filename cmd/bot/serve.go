package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/askrepo/askrepo/internal/config"
)

// runServe serves Slack. Without tokens it says what is missing and points
// at the terminal mode, which needs nothing.
func runServe(ctx context.Context, cfg config.Config, env func(string) (string, bool), stderr io.Writer) error {
	if !cfg.SlackEnabled() {
		return fmt.Errorf("Slack is not configured: %s not set.\n"+
			"  Set them in .env (see README.md, \"In Slack\"), or ask in the terminal, which needs no credentials:\n"+
			"    go run ./cmd/bot ask \"what does this project do?\"\n"+
			"    go run ./cmd/bot chat", strings.Join(cfg.SlackMissing(), " and "))
	}
	return serveSlack(ctx, cfg, env, stderr)
}
