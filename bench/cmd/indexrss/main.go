// Command indexrss measures the memory the service holds for the code
// index of one repository. It opens the repository as the service does (a
// repos.Manager over a path repository, its index kept in -data), waits
// until the index of its commit is ready, collects garbage, and prints the
// resident set size: with -index=false, the same without an index, for the
// difference. A second run over the same -data loads the saved index, as a
// restarted service does. With -commit N it then commits a change to N Go
// files in the checkout, takes a lease (which sees HEAD move), and times
// the index of the new commit, updated from the old one and saved.
//
//	go build -o /tmp/indexrss ./bench/cmd/indexrss
//	/tmp/indexrss -repo DIR -data DIR [-index=false] [-commit N]
//
// bench/index_rss.sh runs it on a copy of Go's src/.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/askrepo/askrepo/bench/internal/procstat"
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
	commit := flag.Int("commit", 0, "then commit a change to this many Go files and time the update")
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
	h, err := waitReady(ctx, m, "", *on)
	if err != nil {
		return err
	}
	report(h, time.Since(start))
	if *commit == 0 || !*on {
		return nil
	}
	sha, err := commitChange(*repo, *commit)
	if err != nil {
		return err
	}
	start = time.Now()
	l, err := m.Acquire(ctx, "bench")
	if err != nil {
		return err
	}
	l.Release()
	if h, err = waitReady(ctx, m, sha, true); err != nil {
		return err
	}
	report(h, time.Since(start))
	return nil
}

// waitReady waits until the index of the repository's current commit is
// ready or failed, and is at commit when one is given (a lease may not
// have moved the index to it yet).
func waitReady(ctx context.Context, m *repos.Manager, commit string, on bool) (repos.RepoHealth, error) {
	if !on {
		return m.Health()[0], nil
	}
	for {
		if _, err := m.WaitIndex(ctx, "bench"); err != nil {
			return repos.RepoHealth{}, err
		}
		if h := m.Health()[0]; commit == "" || h.Index.Commit == commit {
			return h, nil
		}
		select {
		case <-ctx.Done():
			return repos.RepoHealth{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// report prints the index's state and the process's memory after a
// collection.
func report(h repos.RepoHealth, ready time.Duration) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, peak := procstat.KB("VmRSS:"), procstat.KB("VmHWM:")
	state, files := "off", 0
	if h.Index != nil {
		state, files = h.Index.State, h.Index.Files
	}
	fmt.Printf("index=%s files=%d ready_after=%s rss=%dMB (anonymous %dMB, mapped files %dMB) peak_rss=%dMB heap_inuse=%dMB\n",
		state, files, ready.Round(100*time.Millisecond), rss/1024, procstat.KB("RssAnon:")/1024, procstat.KB("RssFile:")/1024, peak/1024, ms.HeapInuse>>20)
}

// commitChange appends a line to the first n Go files git lists in dir,
// commits them, and returns the new commit.
func commitChange(dir string, n int) (string, error) {
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=bench", "-c", "user.email=bench@example.com"}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	list, err := git("ls-files", "*.go")
	if err != nil {
		return "", fmt.Errorf("git ls-files: %w", err)
	}
	files := strings.Split(list, "\n")[:n]
	for _, f := range files {
		fh, err := os.OpenFile(filepath.Join(dir, f), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return "", err
		}
		_, err = fmt.Fprintf(fh, "\nfunc benchAdded%d() {}\n", time.Now().UnixNano())
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	if _, err := git(append([]string{"commit", "-q", "-m", "change", "--"}, files...)...); err != nil {
		return "", fmt.Errorf("git commit: %w", err)
	}
	return git("rev-parse", "HEAD")
}
