// Command indexrss measures the memory the service holds for the code
// index of one repository. It opens the repository as the service does (a
// repos.Manager over a path repository, its index kept in -data), waits
// until the index of its commit is ready, collects garbage, and prints the
// resident set size: with -index=false, the same without an index, for the
// difference. A second run over the same -data loads the saved index, as a
// restarted service does.
//
//	go build -o /tmp/indexrss ./bench/cmd/indexrss
//	/tmp/indexrss -repo DIR -data DIR [-index=false]
//
// bench/index_rss.sh runs it on a copy of Go's src/.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/repos"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "indexrss:", err)
		os.Exit(1)
	}
}

func run() error {
	repo := flag.String("repo", "", "the checkout (a git repository)")
	data := flag.String("data", "", "the data directory; the index is kept in DATA/index")
	on := flag.Bool("index", true, "index the repository")
	flag.Parse()
	if *repo == "" || *data == "" {
		return fmt.Errorf("-repo and -data are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts := repos.Options{DataDir: *data, Logger: log}
	if *on {
		opts.Indexer = index.Indexer{Options: index.Options{Logger: log}}
	}
	start := time.Now()
	m, err := repos.New(ctx, []repos.Spec{repos.Single("bench", *repo, nil)}, opts)
	if err != nil {
		return err
	}
	defer m.Close()
	var h repos.RepoHealth
	for {
		h = m.Health()[0]
		if !*on || h.Index != nil && h.Index.State != repos.IndexBuilding {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	ready := time.Since(start)
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, peak := procKB("VmRSS:"), procKB("VmHWM:")
	state, files := "off", 0
	if h.Index != nil {
		state, files = h.Index.State, h.Index.Files
	}
	fmt.Printf("index=%s files=%d ready_after=%s rss=%dMB peak_rss=%dMB heap_inuse=%dMB\n",
		state, files, ready.Round(100*time.Millisecond), rss/1024, peak/1024, ms.HeapInuse>>20)
	return nil
}

// procKB reads one "Name:  N kB" line of /proc/self/status; 0 when absent.
func procKB(name string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
