package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/askrepo/askrepo/internal/symbols"
	"github.com/askrepo/askrepo/internal/tools"
)

// Build indexes every file ws lists, as the checkout of commit: each read
// through OpenContent, the wall read_file and search_code go through, so
// denied files and secret content are left out. Binary files (a NUL byte
// in the first 8 KiB) and files over MaxFileBytes are listed but not
// indexed: they are candidates for every query. When the secret blobs
// cannot be worked out it fails rather than risk indexing one.
func Build(ctx context.Context, ws *tools.Workspace, commit string, opts Options) (*Index, error) {
	paths, err := ws.Files(ctx)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", shortCommit(commit), err)
	}
	r, err := newReader(ctx, ws, opts)
	if err != nil {
		return nil, err
	}
	sp, err := newSpill(opts.TempDir)
	if err != nil {
		return nil, err
	}
	defer sp.close()
	a := newAssembler(sp)
	if err := r.readAll(ctx, paths, a.add); err != nil {
		return nil, fmt.Errorf("index %s: %w", shortCommit(commit), err)
	}
	ix, err := a.finish(commit, r.note())
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", shortCommit(commit), err)
	}
	ix.ws, ix.wall = ws, wallKey(ctx, ws)
	r.log.Debug("index built", "commit", shortCommit(commit), "files", len(ix.files), "symbols", len(ix.syms))
	return ix, nil
}

func shortCommit(c string) string { return c[:min(len(c), 12)] }

// fileData is what reading one file gives.
type fileData struct {
	path  string
	skip  bool   // not indexed at all: denied, secret, not a regular file
	size  int64  // bytes of text indexed, or why not (notHuge …)
	text  []byte // the text indexed, until the assembler has it
	grams []uint32
	syms  []symbols.Symbol
	ids   []ident
}

// ident is an identifier occurrence ready for the occurrence lists.
type ident struct {
	name string
	line uint32
	def  bool
}

// reader reads files through the wall in parallel.
type reader struct {
	ws       *tools.Workspace
	ctags    *symbols.Ctags
	ctagsErr error // why there is no ctags
	ctagsOff bool
	maxSize  int64
	workers  int
	log      *slog.Logger

	ctagsFailed atomic.Bool // a ctags batch failed
}

func newReader(ctx context.Context, ws *tools.Workspace, opts Options) (*reader, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &reader{ws: ws, maxSize: opts.MaxFileBytes, workers: opts.Workers, log: log.With("component", "index")}
	if r.maxSize <= 0 {
		r.maxSize = tools.DefaultSearchMaxFileSize
	}
	if r.workers <= 0 {
		r.workers = runtime.GOMAXPROCS(0)
	}
	if opts.Ctags == "off" {
		r.ctagsOff = true
		return r, nil
	}
	c, err := symbols.NewCtags(ctx, opts.Ctags, opts.CtagsTimeout)
	switch {
	case errors.Is(err, symbols.ErrNoCtags):
		r.ctagsErr = err
		r.log.Info("no ctags: only Go files will have symbols", "err", err)
	case err != nil:
		return nil, fmt.Errorf("index: %w", err)
	default:
		c.Timeout = opts.CtagsTimeout
		r.ctags = c
	}
	return r, nil
}

// note is the sentence the index carries about what it lacks.
func (r *reader) note() string {
	switch {
	case r.ctagsOff:
		return "ctags is turned off here: only Go files have symbols"
	case r.ctagsErr != nil:
		return "universal-ctags is not installed: only Go files have symbols"
	case r.ctagsFailed.Load():
		return "ctags failed on some files: their symbols are missing"
	}
	return ""
}

// chunkFiles is how many files a worker reads before handing them on.
const chunkFiles = 128

// readAll reads paths in chunks on r.workers goroutines and hands each
// chunk's results to add in path order, one at a time.
func (r *reader) readAll(ctx context.Context, paths []string, add func([]fileData)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	n := (len(paths) + chunkFiles - 1) / chunkFiles
	results := make([]chan []fileData, n)
	for i := range results {
		results[i] = make(chan []fileData, 1)
	}
	next := make(chan int)
	// At most this many chunks are read ahead of the one being added.
	ahead := make(chan struct{}, 2*r.workers)
	go func() {
		defer close(next)
		for i := range n {
			select {
			case ahead <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range r.workers {
		wg.Go(func() {
			grams := newGramSet()
			for i := range next {
				chunk := paths[i*chunkFiles : min((i+1)*chunkFiles, len(paths))]
				data, err := r.chunk(ctx, grams, chunk)
				if err != nil {
					cancel(err)
				}
				results[i] <- data
			}
		})
	}
	for i := range n {
		select {
		case data := <-results[i]:
			if err := context.Cause(ctx); err != nil {
				return err
			}
			add(data)
			<-ahead
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// chunk reads some files: Go ones through go/parser, the others' symbols
// through one ctags run.
func (r *reader) chunk(ctx context.Context, grams gramSet, paths []string) ([]fileData, error) {
	out := make([]fileData, len(paths))
	var others []symbols.Source
	var otherAt []int
	for i, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d := &out[i]
		d.path = p
		src, err := r.read(ctx, p, d)
		if err != nil {
			return nil, err
		}
		if src == nil {
			continue
		}
		d.text = src
		d.grams = grams.fileGrams(src, nil)
		if strings.HasSuffix(p, ".go") {
			f, _ := symbols.Go(p, src)
			d.syms, d.ids = f.Symbols, sortIdents(f.Idents)
		} else if r.ctags != nil {
			others = append(others, symbols.Source{Path: p, Content: src})
			otherAt = append(otherAt, i)
		}
	}
	if len(others) == 0 {
		return out, nil
	}
	tags, err := r.ctags.Tags(ctx, others)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.log.Warn("ctags failed on some files; they have no symbols", "err", err)
		r.ctagsFailed.Store(true)
	}
	for k, f := range tags {
		if len(f.Symbols) == 0 {
			continue
		}
		d := &out[otherAt[k]]
		d.syms = f.Symbols
		d.ids = sortIdents(symbols.Words(others[k].Content, f.Symbols))
	}
	return out, nil
}

// binarySniff is how much of a file is looked at for a NUL byte, as
// search_code does.
const binarySniff = 8 << 10

// read reads one file through the wall into d: its content when it is
// text to index, nil otherwise (d.skip or d.size say why). Only an error
// that must stop the build (the secret blobs unknown, ctx done) is
// returned.
func (r *reader) read(ctx context.Context, rel string, d *fileData) ([]byte, error) {
	d.size = notRead
	f, fi, err := r.ws.OpenContent(ctx, rel)
	switch {
	case errors.Is(err, tools.ErrSecretsUnknown):
		return nil, err
	case errors.Is(err, tools.ErrDenied), errors.Is(err, tools.ErrNotRegular), errors.Is(err, tools.ErrOutside), errors.Is(err, fs.ErrNotExist):
		d.skip = true
		return nil, nil
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.log.Debug("file not indexed", "path", rel, "err", err)
		return nil, nil
	}
	defer f.Close()
	if fi.Size() > r.maxSize {
		d.size = notHuge
		return nil, nil
	}
	// Sized from fstat, with a byte to spare to see a file that grew.
	src := make([]byte, fi.Size()+1)
	n, err := io.ReadFull(f, src)
	src = src[:n]
	switch {
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF):
		return nil, nil
	case n > int(fi.Size()):
		if rest, err := io.ReadAll(io.LimitReader(f, r.maxSize+1-int64(n))); err == nil {
			src = append(src, rest...)
		}
	}
	switch {
	case int64(len(src)) > r.maxSize:
		d.size = notHuge
		return nil, nil
	case bytes.IndexByte(src[:min(len(src), binarySniff)], 0) >= 0:
		d.size = notBinary
		return nil, nil
	}
	d.size = int64(len(src))
	return src, nil
}

// sortIdents orders a file's identifiers by name and line, one per line
// (a definition if any of them is).
func sortIdents(in []symbols.Ident) []ident {
	out := make([]ident, len(in))
	for i, id := range in {
		out[i] = ident{name: id.Name, line: uint32(id.Line), def: id.Def}
	}
	slices.SortFunc(out, func(a, b ident) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return int(a.line) - int(b.line)
	})
	w := 0
	for _, id := range out {
		if w > 0 && out[w-1].name == id.name && out[w-1].line == id.line {
			out[w-1].def = out[w-1].def || id.def
			continue
		}
		out[w] = id
		w++
	}
	return out[:w]
}

// assembler puts files' data together in path order.
type assembler struct {
	files []fileEntry
	grams *gramBuilder
	occs  *occBuilder
	syms  []symbols.Symbol
	text  *spill
}

func newAssembler(text *spill) *assembler {
	return &assembler{grams: newGramBuilder(), occs: newOccBuilder(), text: text}
}

func (a *assembler) add(data []fileData) {
	for _, d := range data {
		if d.skip {
			continue
		}
		id := uint32(len(a.files))
		e := fileEntry{path: d.path, size: d.size, symStart: int32(len(a.syms))}
		a.syms = append(a.syms, d.syms...)
		e.symEnd = int32(len(a.syms))
		a.files = append(a.files, e)
		a.grams.add(id, d.grams)
		a.occs.add(id, d.ids)
		a.text.add(d.text)
	}
}

func (a *assembler) finish(commit, note string) (*Index, error) {
	ix := &Index{commit: commit, note: note, files: a.files, syms: a.syms, nOccs: a.occs.n, diskBytes: new(atomic.Int64)}
	t, err := a.text.finish(a.files)
	if err != nil {
		return nil, err
	}
	ix.text = t
	ix.gramKeys, ix.grams = a.grams.finish()
	ix.names, ix.occs = a.occs.finish()
	ix.derive()
	ix.rank()
	return ix, nil
}
