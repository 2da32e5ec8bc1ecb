// Command searchbench runs the search_code or list_files tool over a
// checkout the way the bot does (one Workspace, the real tool, JSON
// arguments) for a number of iterations, and reports the time per call. It
// exists to compare the in-process tools with ripgrep and git; see
// bench/search_vs_rg.sh.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("searchbench", flag.ContinueOnError)
	dir := fs.String("dir", ".", "checkout to search")
	n := fs.Int("n", 1, "iterations")
	mode := fs.String("mode", "search", "search (search_code), list (list_files recursive), files (Workspace.Files), or rg-globs (print the default deny-list as ripgrep exclusions, one a line)")
	input := fs.String("args", `{}`, "tool arguments as JSON, e.g. {\"pattern\": \"foo\"}")
	cache := fs.Bool("cache", false, "reuse the Workspace's file list between iterations, as the bot does")
	workers := fs.Int("workers", 0, "search_code workers (0: GOMAXPROCS)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile here")
	data := fs.String("data", "", "search through the code index: open -dir as the service does, its index kept in DATA/index (loaded when saved there, built and saved when not), and search through it; the file list is then cached as the service caches it, whatever -cache says")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mode == "rg-globs" {
		printRgGlobs()
		return nil
	}
	ws, src, closeWS, err := open(ctx, *dir, *data, *cache)
	if err != nil {
		return err
	}
	defer closeWS()
	var tool tools.Tool
	switch *mode {
	case "search":
		tool = tools.NewSearchCode(ws, tools.Options{Search: tools.SearchCodeOptions{Workers: *workers}, Index: src})
	case "list":
		tool = tools.NewListFiles(ws, tools.Options{})
	case "files":
	default:
		return fmt.Errorf("unknown -mode %q", *mode)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var times []time.Duration
	var summary string
	for range *n {
		start := time.Now()
		if tool == nil {
			files, err := ws.Files(ctx)
			if err != nil {
				return err
			}
			summary = fmt.Sprintf("%d files", len(files))
		} else {
			out, err := tool.Run(ctx, json.RawMessage(*input))
			if err != nil {
				return err
			}
			summary, _, _ = strings.Cut(out.Text, "\n")
			if *mode == "list" {
				summary = fmt.Sprintf("%d lines", strings.Count(out.Text, "\n"))
			}
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	fmt.Println(summary)
	fmt.Fprintf(os.Stderr, "%d runs: min %.1f ms, median %.1f ms, mean %.1f ms\n", len(times),
		ms(times[0]), ms(times[len(times)/2]), ms(sum/time.Duration(len(times))))
	return nil
}

// open opens the workspace of dir, through the service's repository
// manager and its code index under data when data is set (indexed).
func open(ctx context.Context, dir, data string, cache bool) (*tools.Workspace, tools.IndexSource, func(), error) {
	if data != "" {
		lease, closeRepo, err := indexed(ctx, dir, data)
		if err != nil {
			return nil, nil, nil, err
		}
		return lease.Workspace, lease.Index, closeRepo, nil
	}
	opts := tools.WorkspaceOptions{}
	if !cache {
		opts.FilesTTL = -1 // every iteration lists the files afresh, like an rg run
	}
	ws, err := tools.NewWorkspace(dir, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return ws, nil, func() { ws.Close() }, nil
}

// indexed opens dir as the service opens a path repository, with its code
// index kept under data, waits until the index of its commit is ready
// (loading the saved one, or building and saving it), and leases the
// checkout: what a fresh process that answers through the persisted index
// does before its first search.
func indexed(ctx context.Context, dir, data string) (*repos.Lease, func(), error) {
	m, err := repos.New(ctx, []repos.Spec{repos.Single("bench", dir, nil)}, repos.Options{
		DataDir: data,
		Indexer: index.Indexer{},
	})
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	h, err := m.WaitIndex(ctx, "bench")
	if err != nil || h.State != "ready" {
		m.Close()
		return nil, nil, fmt.Errorf("the code index of %s is %q: %v", dir, h.State, err)
	}
	fmt.Fprintf(os.Stderr, "index ready after %.1f ms\n", ms(time.Since(start)))
	l, err := m.Acquire(ctx, "bench")
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return l, func() { l.Release(); m.Close() }, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printRgGlobs prints tools.DefaultDeny as ripgrep --iglob exclusions, so
// that rg leaves out what search_code leaves out, in any letter case. A
// re-allowing pattern (!.env.example) has no exclusion form in rg, where a
// glob without "!" would restrict the search to it: it is left out, which
// keeps a few more files from rg's side only.
func printRgGlobs() {
	for _, p := range tools.DefaultDeny {
		if strings.HasPrefix(p, "!") {
			continue
		}
		fmt.Println("!" + strings.TrimSuffix(p, "/"))
	}
}
