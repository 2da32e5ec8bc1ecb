// Command indexq measures the code index of one checkout as the tools use
// it: it builds the index (index.Build, as the service does), saves it,
// prints the build's time, CPU and peak memory, the size on disk and the
// resident set while held, then runs find_symbol and search_code through
// the registry the model's calls go through (tools.Default over the index)
// and prints each tool's latency percentiles.
//
//	go build -o /tmp/indexq ./bench/cmd/indexq
//	/tmp/indexq -repo DIR [-n 200] [-seed 1]
//
// The queries are symbol names sampled (seeded) from the index itself:
// find_symbol looks each up by name, search_code searches for it as a
// literal, so both ask for things that exist. bench/big_tree.sh runs it on
// a tree of eight copies of Go's src/.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/askrepo/askrepo/bench/internal/procstat"
	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/tools"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "indexq:", err)
		os.Exit(1)
	}
}

func run() error {
	repo := flag.String("repo", "", "the checkout (a git repository)")
	n := flag.Int("n", 200, "queries per tool")
	seed := flag.Uint64("seed", 1, "seed of the sample of names")
	flag.Parse()
	if *repo == "" {
		return fmt.Errorf("-repo is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out, err := exec.CommandContext(ctx, "git", "-C", *repo, "rev-parse", "HEAD").Output()
	if err != nil {
		return fmt.Errorf("git rev-parse HEAD in %s: %w", *repo, err)
	}
	ws, err := tools.NewWorkspace(*repo, tools.WorkspaceOptions{})
	if err != nil {
		return err
	}
	defer ws.Close()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start, cpu0 := time.Now(), cpuTime()
	idx, err := index.Build(ctx, ws, strings.TrimSpace(string(out)), index.Options{Logger: log})
	if err != nil {
		return err
	}
	built, cpu := time.Since(start), cpuTime()-cpu0
	peak := procstat.KB("VmHWM:")
	tmp, err := os.MkdirTemp("", "indexq")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := idx.Save(filepath.Join(tmp, "index")); err != nil {
		return err
	}
	st := idx.Stats()
	runtime.GC()
	debug.FreeOSMemory()
	fmt.Printf("build: %d files, %.0f MB of text, %d symbols, %d occurrences in %.1f s wall, %.1f s CPU; peak RSS %d MB\n",
		st.Files, float64(st.TextBytes)/1e6, st.Symbols, st.Occurrences, built.Seconds(), cpu.Seconds(), peak/1024)
	// The index's text is a mapped file: its pages count in RSS once
	// touched (Save reads them all) but are the page cache's, dropped
	// under pressure, so the two parts are given apart.
	fmt.Printf("disk: %.0f MB (%.2fx the text); RSS holding it %d MB (anonymous %d MB, mapped files %d MB)\n",
		float64(st.DiskBytes)/1e6, float64(st.DiskBytes)/float64(st.TextBytes), procstat.KB("VmRSS:")/1024,
		procstat.KB("RssAnon:")/1024, procstat.KB("RssFile:")/1024)

	reg := tools.NewRegistry(tools.Default(ws, tools.Options{
		Index: func() (tools.CodeIndex, string) { return idx, "" },
	})...)
	names := sample(idx.SymbolNames(), *n, *seed)
	for _, q := range []struct {
		tool string
		args func(string) any
	}{
		{tools.FindSymbolName, func(s string) any { return map[string]any{"name": s} }},
		{"search_code", func(s string) any { return map[string]any{"pattern": s, "literal": true} }},
	} {
		lat, errs := make([]time.Duration, 0, len(names)), 0
		for i, name := range names {
			in, _ := json.Marshal(q.args(name))
			t0 := time.Now()
			res := reg.Run(ctx, tools.Call{ID: strconv.Itoa(i), Name: q.tool, Input: in})
			lat = append(lat, time.Since(t0))
			if res.IsError {
				errs++
			}
		}
		slices.Sort(lat)
		fmt.Printf("%-12s %d queries: p50 %s  p90 %s  p99 %s  max %s  (%d errors)\n", q.tool, len(lat),
			ms(pct(lat, 50)), ms(pct(lat, 90)), ms(pct(lat, 99)), ms(lat[len(lat)-1]), errs)
	}
	return nil
}

// sample picks n names of at least four bytes, seeded, without repeats.
func sample(all []string, n int, seed uint64) []string {
	var pool []string
	for _, s := range all {
		if len(s) >= 4 {
			pool = append(pool, s)
		}
	}
	r := rand.New(rand.NewPCG(seed, seed))
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	return pool[:min(n, len(pool))]
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, (len(sorted)*p+99)/100-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
