package index

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/askrepo/askrepo/internal/tools"
)

// The benchmarks index Go's own src/ (skipped when it is not there):
//
//	go test -run XXX -bench . -benchtime 1x -benchmem ./internal/index/

func goSrc(b *testing.B) string {
	b.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "src")
	if _, err := os.Stat(filepath.Join(src, "net/http/server.go")); err != nil {
		b.Skipf("no Go source tree at %s", src)
	}
	return src
}

var (
	srcOnce  sync.Once
	srcIndex *Index
	srcWS    *tools.Workspace
	srcErr   error
)

// builtSrc is an index of Go's src/, built once for the query benchmarks.
func builtSrc(b *testing.B) *Index {
	src := goSrc(b)
	srcOnce.Do(func() {
		srcWS, srcErr = tools.NewWorkspace(src, tools.WorkspaceOptions{})
		if srcErr != nil {
			return
		}
		srcIndex, srcErr = Build(context.Background(), srcWS, "src", Options{})
	})
	if srcErr != nil {
		b.Fatal(srcErr)
	}
	return srcIndex
}

func BenchmarkBuild(b *testing.B) {
	src := goSrc(b)
	ws, err := tools.NewWorkspace(src, tools.WorkspaceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	var ix *Index
	for b.Loop() {
		if ix, err = Build(b.Context(), ws, "src", Options{}); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "index")
	if err := ix.Save(path); err != nil {
		b.Fatal(err)
	}
	s := ix.Stats()
	b.ReportMetric(float64(s.Files), "files")
	b.ReportMetric(float64(s.TextBytes)/1e6, "MB-text")
	b.ReportMetric(float64(s.DiskBytes)/1e6, "MB-disk")
	b.ReportMetric(float64(s.DiskBytes)/float64(s.TextBytes), "disk/text")
	b.ReportMetric(float64(s.Symbols), "symbols")
	b.ReportMetric(float64(s.Occurrences), "occurrences")
	b.Logf("note %q", ix.Note())
}

// BenchmarkLoad is opening the saved index: as a search needs it (the
// file table, the trigram table in place), checked whole as the service
// loads it (Verify), and with the symbols decoded as the symbol tools
// need them; with the live heap that holding each costs.
func BenchmarkLoad(b *testing.B) {
	ix := builtSrc(b)
	path := filepath.Join(b.TempDir(), "index")
	if err := ix.Save(path); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		then func(*Index) error
	}{
		{"search", func(*Index) error { return nil }},
		{"verified", (*Index).Verify},
		{"symbols", func(ix *Index) error { ix.Definitions("Client.Do", false); return ix.damage() }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var loaded *Index
			for b.Loop() {
				var err error
				if loaded, err = Load(path); err == nil {
					err = tc.then(loaded)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			var with, without runtime.MemStats
			runtime.ReadMemStats(&with)
			runtime.KeepAlive(loaded)
			loaded = nil
			runtime.GC()
			runtime.ReadMemStats(&without)
			b.ReportMetric(float64(int64(with.HeapAlloc)-int64(without.HeapAlloc))/1e6, "MB-heap-held")
		})
	}
}

// BenchmarkUpdate10 updates the index of a copy of src/ after 10 Go files
// changed.
func BenchmarkUpdate10(b *testing.B) {
	src := goSrc(b)
	dir := filepath.Join(b.TempDir(), "src")
	if out, err := exec.Command("cp", "-r", src, dir).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, out)
	}
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{FilesTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	prev, err := Build(b.Context(), ws, "before", Options{})
	if err != nil {
		b.Fatal(err)
	}
	changed := []string{
		"net/http/server.go", "net/http/client.go", "fmt/print.go", "os/file.go", "strings/strings.go",
		"bytes/bytes.go", "io/io.go", "sort/sort.go", "errors/errors.go", "context/context.go",
	}
	for i, p := range changed {
		f, err := os.OpenFile(filepath.Join(dir, p), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(f, "\nfunc BenchmarkAdded%d() {}\n", i)
		f.Close()
	}
	var ix *Index
	for b.Loop() {
		if ix, err = Update(b.Context(), prev, ws, "after", changed, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	if len(ix.Definitions("BenchmarkAdded3", false)) != 1 {
		b.Error("the update lost a new function")
	}
}

func BenchmarkCandidates(b *testing.B) {
	ix := builtSrc(b)
	for _, lits := range [][]string{{"NewServeMux"}, {"func (c *Client) Do("}, {"http", "Handler"}, {"return"}} {
		b.Run(strings.Join(lits, "+"), func(b *testing.B) {
			var n int
			for b.Loop() {
				got, _ := ix.Candidates(lits, false)
				n = len(got)
			}
			b.ReportMetric(float64(n), "files")
			b.ReportMetric(float64(n-len(ix.unread)), "text-files")
		})
	}
}

// BenchmarkSearchCode is search_code through the index, as a turn runs it
// once the index of its commit is ready (the file list cached, as between
// commits): a selective literal, and a regular expression with a literal
// part.
func BenchmarkSearchCode(b *testing.B) {
	ix := builtSrc(b)
	for _, args := range []string{`{"pattern": "NewServeMux", "literal": true}`, `{"pattern": "func \\(c \\*Client\\) Do\\("}`} {
		searchCode(b, args, ix, args)
	}
}

// searchCode times search_code with args through idx, the file list
// cached as between a turn's calls.
func searchCode(b *testing.B, name string, idx tools.CodeIndex, args string) {
	tool := tools.NewSearchCode(srcWS, tools.Options{Index: func() (tools.CodeIndex, string) { return idx, "" }})
	b.Run(name, func(b *testing.B) {
		var head string
		for b.Loop() {
			out, err := tool.Run(b.Context(), json.RawMessage(args))
			if err != nil {
				b.Fatal(err)
			}
			head = strings.ReplaceAll(strings.Join(strings.SplitN(out.Text, "\n", 3)[:2], " / "), "\n", " ")
		}
		b.Log(head)
	})
}

func BenchmarkDefinitions(b *testing.B) {
	ix := builtSrc(b)
	ix.folded()
	for b.Loop() {
		ix.Definitions("Client.Do", false)
		ix.Definitions("newservemux", true)
	}
}

// BenchmarkRank is the ranking's share of a build or an update.
func BenchmarkRank(b *testing.B) {
	ix := builtSrc(b)
	for b.Loop() {
		ix.rank()
	}
}

// BenchmarkFiles is the first call of Files on a loaded index.
func BenchmarkFiles(b *testing.B) {
	ix := builtSrc(b)
	for b.Loop() {
		ix.lazy = &lazy{}
		ix.Files()
	}
}

// BenchmarkReferences reads the lines of every occurrence through the
// workspace: "err" is in most Go files of src/, "NewServeMux" in a few.
func BenchmarkReferences(b *testing.B) {
	ix := builtSrc(b)
	for _, name := range []string{"NewServeMux", "Handler", "err"} {
		b.Run(name, func(b *testing.B) {
			var n int
			for b.Loop() {
				n = len(ix.References(name))
			}
			b.ReportMetric(float64(n), "occurrences")
		})
	}
}
