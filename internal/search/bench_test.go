package search

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// benchMaxFileSize is the search tool's default limit: larger files are
// skipped by a search, so they are left out of the corpus too.
const benchMaxFileSize = 2 << 20

// benchCorpus loads the Go distribution's net/ and go/ source trees (a few
// MB of real code, found through `go env GOROOT`) into memory, so the
// benchmarks measure matching alone, without the file system.
func benchCorpus(b *testing.B) (files [][]byte, size int64) {
	b.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "src")
	for _, sub := range []string{"net", "go"} {
		err := filepath.WalkDir(filepath.Join(root, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil || len(data) > benchMaxFileSize || bytes.IndexByte(data[:min(len(data), binarySniffLen)], 0) >= 0 {
				return err
			}
			files = append(files, data)
			size += int64(len(data))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return files, size
}

var benchPatterns = []struct {
	name, pattern       string
	literal, ignoreCase bool
}{
	{name: "literal", pattern: "ErrUnexpectedEOF", literal: true},
	{name: "inner-literal", pattern: `\w+Error\(`},
	{name: "no-literal", pattern: `[A-Z][a-z]+[0-9]{2,}`},
	{name: "ignore-case", pattern: "parseerror", literal: true, ignoreCase: true},
	// Neither a literal nor a rare class run: the automaton scans every byte.
	{name: "no-prefilter", pattern: `\w+[a-z][A-Z]\w+`},
}

// BenchmarkSearchEngine runs the engine (prefilters, line verification,
// formatting of the first 100 matches) over the in-memory corpus.
func BenchmarkSearchEngine(b *testing.B) {
	benchEachPattern(b, func(m *Matcher) func(file []byte) {
		// A flag never set, as a search runs with one.
		var stop atomic.Bool
		return func(f []byte) { m.collectFile(f, &stop, 0, 100) }
	})
}

// BenchmarkSearchPlainRegexp is the baseline the prefilters are for: Go's
// regexp over each whole file, as a naive implementation would run it.
func BenchmarkSearchPlainRegexp(b *testing.B) {
	benchEachPattern(b, func(m *Matcher) func(file []byte) {
		re := regexp.MustCompile(m.re.String())
		return func(f []byte) { re.FindAllIndex(f, -1) }
	})
}

// benchEachPattern runs one sub-benchmark per pattern of benchPatterns:
// prepare gets the compiled pattern and returns the search of one file,
// which each iteration runs over the whole corpus.
func benchEachPattern(b *testing.B, prepare func(m *Matcher) func(file []byte)) {
	files, size := benchCorpus(b)
	for _, p := range benchPatterns {
		b.Run(p.name, func(b *testing.B) {
			m, err := Compile(p.pattern, p.literal, p.ignoreCase)
			if err != nil {
				b.Fatal(err)
			}
			search := prepare(m)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				for _, f := range files {
					search(f)
				}
			}
		})
	}
}
