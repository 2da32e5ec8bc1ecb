package search

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
)

// Job is one search over a list of files. A Job is used once; the
// matcher may be shared.
type Job struct {
	Files []string // searched in this order, which is also output order
	// NewReader makes one FileReader per worker.
	NewReader    func() FileReader
	Matcher      *Matcher
	ContextLines int   // lines shown before and after each match
	MaxResults   int   // matching lines formatted across all files
	MaxFileSize  int64 // larger files are skipped as SkipHuge
	Workers      int   // files searched at once; at least one
	// Expired (required) reports whether the time budget is spent; checked between
	// files, alongside ctx, which is also looked at inside a file.
	Expired func() bool
}

// Result is the outcome of a search, complete or not.
type Result struct {
	Files    []string
	Hits     []FileHits // parallel to Files; Done is false if never searched
	Searched int        // files searched to their end
	Cut      int        // files the search stopped inside
	Complete bool
}

// liveWorkers counts the workers of all searches that have not
// returned.
var liveWorkers atomic.Int64

// LiveWorkers returns how many workers of searches that have not returned
// are running, so tests (also the callers') can check that no work of a
// search outlives it.
func LiveWorkers() int64 { return liveWorkers.Load() }

// bufPool holds file buffers between reads. A search reads thousands of
// files; reusing buffers keeps the garbage collector out of the profile.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// Run searches all files, stopping early when ctx ends or time runs out.
// It returns only after every worker has: no work of a search outlives it.
func (j *Job) Run(ctx context.Context) Result {
	res := Result{Files: j.Files, Hits: make([]FileHits, len(j.Files))}
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	var (
		next     atomic.Int64
		searched atomic.Int64
		cut      atomic.Int64
		// Files past cutoff need no formatted lines: the matches of
		// earlier files already fill the output. Only counts are kept.
		cutoff   atomic.Int64
		mu       sync.Mutex
		frontier int // files before it are done
		shown    int // matches to show among files before frontier
	)
	cutoff.Store(int64(len(j.Files)))
	workers := max(1, j.Workers)
	// Workers take runs of neighbouring files, which mostly share a
	// directory: a reader opens each directory once per run instead of
	// every worker opening every directory. Runs stay short enough to
	// keep the workers evenly loaded.
	batch := int64(max(1, min(16, len(j.Files)/(workers*16))))
	var wg sync.WaitGroup
	for range workers {
		liveWorkers.Add(1)
		wg.Go(func() {
			defer liveWorkers.Add(-1)
			r := j.NewReader()
			defer r.Close()
			for {
				first := int(next.Add(batch) - batch)
				for i := first; i < min(first+int(batch), len(j.Files)); i++ {
					if ctx.Err() != nil || j.Expired() {
						return
					}
					limit := j.MaxResults
					if int64(i) > cutoff.Load() {
						limit = 0
					}
					h := j.searchFile(r, j.Files[i], &stop, limit)
					if h.Partial {
						cut.Add(1)
					} else {
						searched.Add(1)
					}
					mu.Lock()
					res.Hits[i] = h
					for frontier < len(j.Files) && res.Hits[frontier].Done {
						shown += res.Hits[frontier].Matches
						if shown >= j.MaxResults && cutoff.Load() == int64(len(j.Files)) {
							cutoff.Store(int64(frontier))
						}
						frontier++
					}
					mu.Unlock()
				}
				if first+int(batch) >= len(j.Files) {
					return
				}
			}
		})
	}
	wg.Wait()
	res.Searched = int(searched.Load())
	res.Cut = int(cut.Load())
	res.Complete = res.Searched == len(j.Files)
	return res
}

func (j *Job) searchFile(r FileReader, rel string, stop *atomic.Bool, limit int) FileHits {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf, lent, skip := r.Read(rel, (*bp)[:0], j.MaxFileSize)
	if !lent {
		*bp = buf[:0]
	}
	if skip != NotSkipped {
		return FileHits{Done: true, Skip: skip}
	}
	if bytes.IndexByte(buf[:min(len(buf), binarySniffLen)], 0) >= 0 {
		return FileHits{Done: true, Skip: SkipBinary}
	}
	h := j.Matcher.collectFile(buf, stop, j.ContextLines, limit)
	h.Done = true
	return h
}
