package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/askrepo/askrepo/internal/config"
)

// healthTimeout bounds one health check, under the container runtime's own
// timeout so that a hung listener is reported by us, not killed.
const healthTimeout = 3 * time.Second

// runHealthcheck asks the running service's /healthz on the address its
// settings give (BOT_HTTP_ADDR or --http-addr), so a container's health
// check follows the listener wherever it is configured instead of naming
// a port of its own.
func runHealthcheck(ctx context.Context, cfg config.Config, out io.Writer) error {
	url, err := healthURL(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health check: %s did not answer: %w; is bot serve running with this BOT_HTTP_ADDR?", url, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check: %s answered %s", url, resp.Status)
	}
	fmt.Fprintf(out, "healthy: %s\n", url)
	return nil
}

// healthURL is the /healthz URL of a listener bound to addr: an address
// bound to every interface (":8080", "0.0.0.0:8080", "[::]:8080") is
// asked on loopback.
func healthURL(addr string) (string, error) {
	if addr == "" {
		return "", errors.New("health check: BOT_HTTP_ADDR is empty, so the service has no /healthz to ask; set it (for example :8080)")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("health check: BOT_HTTP_ADDR %q: want host:port or :port", addr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
