package tools

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/ctxio"
)

// ReadFileName is the name the model calls read_file by.
const ReadFileName = "read_file"

//go:embed desc/read_file.md
var readFileDescription string

const (
	// defaultReadLines is how many lines one call returns without a limit.
	defaultReadLines = 2000
	// maxLineRunes cuts single lines (minified JS, generated data): one
	// such line could otherwise fill the whole context.
	maxLineRunes = 2000
	// readFooterRoom is kept out of the output budget (see OutputBudget)
	// for the footer: a page fills the rest with whole lines and stops
	// with a continuation hint, so the model keeps going and skips none.
	readFooterRoom = 256
	// minPageBytes keeps a page useful under a budget set absurdly low;
	// the registry's last-resort cut then applies.
	minPageBytes = 1024
	// binarySniff is how much of the start of a file is checked for NUL.
	binarySniff = 8192
)

type readFileArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// ReadFile is the read_file tool: a page of a file's numbered lines. It
// is safe for concurrent use.
type ReadFile struct{ ws *Workspace }

// NewReadFile returns the read_file tool over ws; it has no options.
func NewReadFile(ws *Workspace, _ Options) *ReadFile { return &ReadFile{ws: ws} }

// Describe implements Describer: "a.go", "a.go:10-80" for offset 10 and
// limit 71, "a.go:10-" for an offset alone.
func (r *ReadFile) Describe(input json.RawMessage) string {
	return describeFile(input, func(f argsForm) string {
		offset, hasOffset := f.num("offset")
		limit, hasLimit := f.num("limit")
		return pageRange(offset, hasOffset, limit, hasLimit)
	})
}

func (r *ReadFile) Definition() Definition {
	return Definition{
		Name:        ReadFileName,
		Description: strings.TrimSpace(readFileDescription),
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path relative to the repository root, e.g. \"internal/server/server.go\"."},` +
			`"offset":{"type":"integer","minimum":1,"description":"First line to read, 1-based. Default 1."},` +
			`"limit":{"type":"integer","minimum":1,"description":"Number of lines to read. Default 2000."}},` +
			`"required":["path"]}`),
	}
}

func (r *ReadFile) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[readFileArgs](input)
	if err != nil {
		return Output{}, err
	}
	if strings.TrimSpace(args.Path) == "" {
		return Output{}, errors.New(`"path" is required: the file to read, relative to the repository root, e.g. "README.md"; use list_files or glob to find it`)
	}
	if args.Offset < 0 {
		return Output{}, fmt.Errorf(`"offset" must be 1 or more (the first line to read, 1-based), not %d`, args.Offset)
	}
	if args.Limit < 0 {
		return Output{}, fmt.Errorf(`"limit" must be 1 or more (the number of lines to read), not %d; leave it out to read %d lines`, args.Limit, defaultReadLines)
	}
	offset := max(args.Offset, 1)
	limit := args.Limit
	if limit == 0 {
		limit = defaultReadLines
	}
	f, fi, err := r.ws.OpenContent(ctx, args.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Output{}, r.notFound(ctx, args.Path)
		}
		return Output{}, err
	}
	defer f.Close()
	rel, _ := r.ws.Rel(args.Path)
	if fi.Size() == 0 {
		return Output{Text: fmt.Sprintf("%s is empty (0 bytes).", rel), Refs: []Ref{{Path: rel}}}, nil
	}
	// bufio reads 64 KB at a time, so a read of any size looks at ctx that
	// often.
	br := bufio.NewReaderSize(ctxio.Reader{Ctx: ctx, R: f}, 64*1024)
	head, err := br.Peek(binarySniff)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return Output{}, fmt.Errorf("read %s: %w", rel, err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return Output{}, fmt.Errorf("%s is a binary file (%s); it is not shown. Look for the source it was built from or its documentation instead", rel, formatBytes(fi.Size()))
	}
	text, last, cut, err := readLines(ctx, br, rel, offset, limit)
	if err != nil {
		return Output{}, err
	}
	ref := Ref{Path: rel}
	if args.Offset > 1 || args.Limit > 0 || cut {
		ref.Start, ref.End = offset, last
	}
	return Output{Text: text, Refs: []Ref{ref}}, nil
}

// readLines numbers lines offset..offset+limit-1 and reads on to the end
// to count the total, which the footer needs to tell where to continue. br
// reads through a ctxio.Reader: a file of any size, or one line of any length,
// ends the read when ctx does. If that happens once the page is complete,
// the page is returned with a footer that says the total is unknown. last
// is the last line shown, and cut says the page ends before the file does
// (the footer tells where to continue).
func readLines(ctx context.Context, br *bufio.Reader, rel string, offset, limit int) (text string, last int, cut bool, err error) {
	budget := max(OutputBudget(ctx)-readFooterRoom, minPageBytes)
	var out strings.Builder
	var keep []byte
	total := 0
	capped := false
	for {
		line, n, err := readLine(br, keep, maxLineRunes*utf8.UTFMax)
		keep = line
		if n == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			if ctx.Err() != nil && last > 0 && (capped || total >= offset+limit-1) {
				fmt.Fprintf(&out, "[lines %d–%d; the file goes on, but its length was not counted before the time ran out; continue with offset=%d]\n", offset, last, last+1)
				return out.String(), last, true, nil
			}
			return "", 0, false, fmt.Errorf("read %s: %w", rel, err)
		}
		total++
		if total >= offset && total < offset+limit && !capped {
			text := formatLine(total, line, n)
			switch {
			case out.Len()+len(text) <= budget:
				out.WriteString(text)
				last = total
			case out.Len() == 0:
				// One line over the whole budget: show what fits of
				// it, so the page still moves on.
				out.WriteString(fitLine(text, budget))
				last, capped = total, true
			default:
				capped = true
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if offset > total {
		return "", 0, false, fmt.Errorf("offset %d is past the end of %s, which has %d lines; use an offset from 1 to %d", offset, rel, total, total)
	}
	if last < total {
		note := ""
		if capped {
			note = fmt.Sprintf(" (output capped at %s)", sizeText(OutputBudget(ctx)))
		}
		fmt.Fprintf(&out, "[lines %d–%d of %d%s; continue with offset=%d]\n", offset, last, total, note, last+1)
	}
	return out.String(), last, last < total, nil
}

// readLine reads one line of any length, keeping at most maxKeep bytes of
// it in keep's storage; n is the full length read, newline included.
// bufio.Scanner would fail on a minified line over its token limit.
func readLine(br *bufio.Reader, keep []byte, maxKeep int) (line []byte, n int, err error) {
	keep = keep[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		n += len(chunk)
		if room := maxKeep - len(keep); room > 0 {
			keep = append(keep, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return keep, n, err
	}
}

// formatLine renders one numbered line. The unpadded "N\t" prefix costs
// about half the tokens of cat -n's "%6d\t".
func formatLine(no int, line []byte, n int) string {
	complete := len(line) == n
	if complete {
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
	}
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	cut := !complete
	if utf8.RuneCountInString(s) > maxLineRunes {
		s = string([]rune(s)[:maxLineRunes])
		cut = true
	}
	if cut {
		s += fmt.Sprintf(" … [line truncated at %d characters; it is %d bytes long]", maxLineRunes, n)
	}
	return strconv.Itoa(no) + "\t" + s + "\n"
}

// fitLine cuts a formatted line to about budget bytes at a rune boundary
// and says so.
func fitLine(text string, budget int) string {
	const note = " … [line cut to fit the output limit]\n"
	keep := runeStart(text, max(0, min(len(text), budget-len(note))))
	return text[:keep] + note
}

func (r *ReadFile) notFound(ctx context.Context, p string) error {
	rel, err := r.ws.Rel(p)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("%s: %v", rel, fs.ErrNotExist)
	if files, err := r.ws.Files(ctx); err == nil {
		if s := suggestPaths(ctx, rel, files, 3); len(s) > 0 {
			msg += "; did you mean " + quoteList(s) + "?"
		}
	}
	return fmt.Errorf("%s. Use glob to find a file by name, or list_files to see what a directory holds: %w", msg, fs.ErrNotExist)
}

// Summarize gives "lines 1–2000 of 5210" for a partial read, else the
// number of lines shown.
func (r *ReadFile) Summarize(output string) string {
	trimmed := strings.TrimSuffix(output, "\n")
	if i := strings.LastIndexByte(trimmed, '\n'); strings.HasPrefix(trimmed[i+1:], "[lines ") {
		footer := trimmed[i+1+1:]
		footer, _, _ = strings.Cut(footer, ";")
		footer, _, _ = strings.Cut(footer, " (")
		return footer
	}
	if strings.HasSuffix(trimmed, "is empty (0 bytes).") {
		return "empty file"
	}
	return countLines(output)
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}
