package symbols

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoCtags is wrapped when universal-ctags cannot be used: not
// installed, not universal-ctags, or built without JSON output or the
// interactive mode. Go files are still read without it.
var ErrNoCtags = errors.New("universal-ctags is not installed")

// Ctags runs universal-ctags to read the definitions of files in other
// languages than Go.
//
// It never lets ctags open a file: ctags runs in its interactive mode
// (--_interactive, in its seccomp sandbox when it was built with one) and
// is fed each file's content on standard input, with the file's name only
// as a label for choosing the language. So a name that looks like an
// option ("--help.js"), a symlink swapped in after the caller checked the
// file, or a file the caller did not read can never reach it, and the
// checkout's configuration cannot either (--options=NONE: no .ctags.d, no
// ~/.ctags, no environment). Each batch of files runs in its own process
// with a timeout, under a cap on its address space when prlimit
// (util-linux) is installed to set one without a shell, and at most
// MaxOutput bytes of its output are read.
//
// A Ctags is safe for concurrent use.
type Ctags struct {
	path    string
	sandbox bool
	prlimit string // prlimit's path, or "" to run ctags without a cap
	off     string // the --languages option turning off notCode, or ""
	// MaxMemory caps a ctags process's address space, when prlimit is
	// there; zero means 1 GiB.
	MaxMemory int64
	// Timeout bounds one batch (one process); zero means 30s.
	Timeout time.Duration
	// MaxOutput bounds the bytes read from one batch; zero means 64 MiB.
	MaxOutput int64
	// BatchFiles and BatchBytes bound the files and content one process
	// is given; zero means 256 files and 16 MiB.
	BatchFiles int
	BatchBytes int64
}

// NewCtags finds universal-ctags (name is a path or a command looked up
// on PATH; "" means "ctags") and checks, within timeout, that it can
// write JSON in its interactive mode. Otherwise the error wraps ErrNoCtags
// and says why.
func NewCtags(ctx context.Context, name string, timeout time.Duration) (*Ctags, error) {
	if name == "" {
		name = "ctags"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCtags, err)
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := command(ctx, path, "--options=NONE", "--list-features")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s --list-features: %v", ErrNoCtags, path, err)
	}
	features := map[string]bool{}
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			features[f[0]] = true
		}
	}
	if !features["json"] || !features["interactive"] {
		return nil, fmt.Errorf("%w: %s lacks JSON output or the interactive mode (universal-ctags 5.9 or later has both)", ErrNoCtags, path)
	}
	c := &Ctags{path: path, sandbox: features["sandbox"], Timeout: timeout}
	langs, err := command(ctx, path, "--options=NONE", "--list-languages").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s --list-languages: %v", ErrNoCtags, path, err)
	}
	c.off = offLanguages(string(langs))
	if p, err := exec.LookPath("prlimit"); err == nil {
		c.prlimit = p
	}
	return c, nil
}

// notCode are the languages ctags reads that are data, configuration or
// prose: their keys and headings are not definitions anyone looks for
// with find_symbol, and a large JSON fixture would bury the code's.
var notCode = []string{
	"Ant", "AnsiblePlaybook", "Asciidoc", "BibTeX", "DBusIntrospect", "Diff", "DTD", "Gdbinit", "Glade",
	"HTML", "Iniconf", "JavaProperties", "JSON", "Man", "Markdown", "Maven2", "Passwd", "PlistXML", "Pod",
	"PythonLoggingConfig", "QemuHX", "RelaxNG", "ReStructuredText", "RpmMacros", "RpmSpec", "SVG",
	"SystemdUnit", "Tex", "TeXBeamer", "Txt2tags", "XML", "Yaml", "YumRepo",
}

// offLanguages is the option turning off those of notCode this ctags
// knows (naming one it does not know is an error), given its
// --list-languages output.
func offLanguages(list string) string {
	known := map[string]bool{}
	for line := range strings.SplitSeq(list, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			known[f[0]] = true
		}
	}
	var off []string
	for _, l := range notCode {
		if known[l] {
			off = append(off, l)
		}
	}
	if len(off) == 0 {
		return ""
	}
	return "--languages=-" + strings.Join(off, ",")
}

// command is ctags with no environment of the caller's and run outside
// the checkout.
func command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"LC_ALL=C"}
	cmd.Dir = os.TempDir()
	cmd.WaitDelay = time.Second
	return cmd
}

// Source is a file to read: its path (slash-separated, relative to the
// checkout) and its content.
type Source struct {
	Path    string
	Content []byte
}

// Tags reads the definitions of files, in batches. The result has one
// File per source, in order, with Symbols only (see Words for the
// identifiers). A batch that fails (ctags crashed, timed out, or wrote
// too much) leaves its files without symbols; the error joins every
// batch's failure and the others' results stand.
func (c *Ctags) Tags(ctx context.Context, files []Source) ([]File, error) {
	out := make([]File, len(files))
	maxFiles, maxBytes := c.BatchFiles, c.BatchBytes
	if maxFiles <= 0 {
		maxFiles = 256
	}
	if maxBytes <= 0 {
		maxBytes = 16 << 20
	}
	var errs []error
	for start := 0; start < len(files); {
		end, size := start, int64(0)
		for end < len(files) && end-start < maxFiles && (end == start || size+int64(len(files[end].Content)) <= maxBytes) {
			size += int64(len(files[end].Content))
			end++
		}
		if err := c.batch(ctx, files[start:end], out[start:end]); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		start = end
	}
	return out, errors.Join(errs...)
}

type ctagsLine struct {
	Type      string `json:"_type"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	Language  string `json:"language"`
	Line      int    `json:"line"`
	Kind      string `json:"kind"`
	Scope     string `json:"scope"`
	ScopeKind string `json:"scopeKind"`
	End       int    `json:"end"`
	Access    string `json:"access"`
}

func (c *Ctags) batch(ctx context.Context, files []Source, out []File) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	maxOut := c.MaxOutput
	if maxOut <= 0 {
		maxOut = 64 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	mode := "--_interactive"
	if c.sandbox {
		mode += "=sandbox"
	}
	args := []string{"--options=NONE", mode, "--output-format=json", "--sort=no", "--fields=+nKSela-P"}
	if c.off != "" {
		args = append(args, c.off)
	}
	cmd := command(ctx, c.path, args...)
	if c.prlimit != "" {
		limit := c.MaxMemory
		if limit <= 0 {
			limit = 1 << 30
		}
		cmd = command(ctx, c.prlimit, append([]string{"--as=" + strconv.FormatInt(limit, 10), "--", c.path}, args...)...)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("ctags: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("ctags: %w", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("ctags: %w", err)
	}
	go func() {
		defer stdin.Close()
		for _, f := range files {
			head, _ := json.Marshal(map[string]any{"command": "generate-tags", "filename": f.Path, "size": len(f.Content)})
			if _, err := stdin.Write(append(head, '\n')); err != nil {
				return
			}
			if _, err := stdin.Write(f.Content); err != nil {
				return
			}
		}
	}()
	limited := &io.LimitedReader{R: stdout, N: maxOut + 1}
	readErr := c.read(limited, files, out)
	if limited.N <= 0 {
		readErr = fmt.Errorf("output exceeds %d bytes", maxOut)
	}
	if readErr != nil {
		cancel() // stop it now rather than wait for it to finish writing
		clear(out)
	}
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil && readErr == nil || errors.Is(ctx.Err(), context.DeadlineExceeded):
		clear(out)
		return fmt.Errorf("ctags on %d files from %s: %w", len(files), files[0].Path, ctx.Err())
	case readErr != nil:
		return fmt.Errorf("ctags on %d files from %s: %w", len(files), files[0].Path, readErr)
	case waitErr != nil:
		clear(out)
		return fmt.Errorf("ctags on %d files from %s: %w: %s", len(files), files[0].Path, waitErr, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// read takes ctags' output: tag lines for the current file, then a
// "completed" line that moves to the next one.
func (c *Ctags) read(r io.Reader, files []Source, out []File) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	i := 0
	var lines []int
	for sc.Scan() {
		var t ctagsLine
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return fmt.Errorf("unexpected output %.80q", sc.Text())
		}
		switch t.Type {
		case "completed":
			if i < len(out) {
				sortByLine(out[i].Symbols)
			}
			i++
			lines = nil
			continue
		case "tag":
		default:
			continue
		}
		if i >= len(files) || t.Path != files[i].Path || t.Name == "" {
			continue
		}
		if lines == nil {
			lines = lineStarts(files[i].Content)
		}
		out[i].Symbols = append(out[i].Symbols, ctagsSymbol(t, files[i], lines))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if i < len(files) {
		return fmt.Errorf("output ended after %d of %d files (limit or crash)", i, len(files))
	}
	return nil
}

// sortByLine puts a file's symbols in line order; ctags writes them in
// its own order (sorted by name, or as its parser finds them).
func sortByLine(syms []Symbol) {
	slices.SortStableFunc(syms, func(a, b Symbol) int { return a.Line - b.Line })
}

func ctagsSymbol(t ctagsLine, f Source, lines []int) Symbol {
	s := Symbol{
		Name:      t.Name,
		Kind:      t.Kind,
		Container: lastScope(t.Scope),
		Path:      f.Path,
		Line:      max(t.Line, 1),
		Lang:      strings.ToLower(t.Language),
		Test:      IsTestPath(f.Path),
		Generated: looksGenerated(f.Content),
	}
	s.EndLine = max(t.End, s.Line)
	s.Signature = clip(strings.TrimSpace(lineText(f.Content, lines, s.Line)))
	s.Doc = commentAbove(f.Content, lines, s.Line)
	s.Exported = t.Access != "private" && t.Access != "protected" && !strings.HasPrefix(t.Name, "_")
	return s
}

// lastScope is the innermost part of a scope: "Inner" for "pkg.Outer.Inner"
// or "ns::Inner".
func lastScope(s string) string {
	if i := strings.LastIndex(s, "::"); i >= 0 {
		s = s[i+2:]
	}
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
