package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// ListFilesName is the name the model calls list_files by.
const ListFilesName = "list_files"

//go:embed desc/list_files.md
var listFilesDescription string

// maxListEntries caps one listing; a bigger tree is better explored a
// directory at a time than read as a wall of paths.
const maxListEntries = 500

// listNoteRoom is kept out of the output budget for the note on what was
// not shown, which names a directory.
const listNoteRoom = 256

type listFilesArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

// ListFiles is the list_files tool: what a directory holds, or every
// file below it. It is safe for concurrent use.
type ListFiles struct{ ws *Workspace }

// NewListFiles returns the list_files tool over ws; it has no options.
func NewListFiles(ws *Workspace, _ Options) *ListFiles { return &ListFiles{ws: ws} }

// Describe implements Describer: "." for the root, "cmd",
// "cmd (recursive)".
func (l *ListFiles) Describe(input json.RawMessage) string {
	f, _ := parseArgsForm(input)
	var b strings.Builder
	if p := f.str("path"); p != "" {
		b.WriteString(p)
	} else {
		b.WriteString(".")
	}
	if on, _ := f.flag("recursive"); on {
		b.WriteString(" (recursive)")
	}
	return f.rest(&b)
}

func (l *ListFiles) Definition() Definition {
	return Definition{
		Name:        ListFilesName,
		Description: strings.TrimSpace(listFilesDescription),
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Directory relative to the repository root. Default \".\", the root."},` +
			`"recursive":{"type":"boolean","description":"List every file below path instead of the immediate entries. Default false."}}}`),
	}
}

func (l *ListFiles) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[listFilesArgs](input)
	if err != nil {
		return Output{}, err
	}
	p := strings.TrimSpace(args.Path)
	if p == "" {
		p = "."
	}
	rel, err := l.ws.Rel(p)
	if err != nil {
		return Output{}, err
	}
	if err := l.checkDir(ctx, rel); err != nil {
		return Output{}, err
	}
	files, err := l.ws.Files(ctx)
	if err != nil {
		return Output{}, err
	}
	prefix := ""
	if rel != "." {
		prefix = rel + "/"
	}
	entries := listEntries(files, prefix, args.Recursive)
	return Output{Text: l.render(ctx, rel, prefix, entries, args.Recursive), Refs: []Ref{{Path: rel, Dir: true}}}, nil
}

// listEntries is what files (sorted) holds under prefix: every file below
// it when recursive, else its immediate entries, directories ending in "/".
func listEntries(files []string, prefix string, recursive bool) []string {
	// Files is sorted, so everything under prefix is one contiguous run.
	lo := sort.SearchStrings(files, prefix)
	hi := lo
	for hi < len(files) && strings.HasPrefix(files[hi], prefix) {
		hi++
	}
	under := files[lo:hi]
	if recursive {
		entries := make([]string, 0, len(under))
		for _, f := range under {
			entries = append(entries, f[len(prefix):])
		}
		return entries
	}
	var entries []string
	seen := make(map[string]bool)
	for _, f := range under {
		name, _, isDir := strings.Cut(f[len(prefix):], "/")
		if isDir {
			name += "/"
		}
		if !seen[name] {
			seen[name] = true
			entries = append(entries, name)
		}
	}
	sort.Strings(entries)
	return entries
}

// render writes the listing of rel: a header with the count, the entries
// that fit the output budget, and what to do about the rest.
func (l *ListFiles) render(ctx context.Context, rel, prefix string, entries []string, recursive bool) string {
	header := "./"
	if rel != "." {
		header = rel + "/"
	}
	var b strings.Builder
	noun := nounFor(len(entries), "entry", "entries")
	if recursive {
		noun = nounFor(len(entries), "file", "files") + ", recursive"
	}
	fmt.Fprintf(&b, "%s (%d %s)\n", header, len(entries), noun)
	if len(entries) == 0 {
		b.WriteString("(nothing to list: the directory is empty, or everything in it is ignored or on the deny-list)\n")
		return b.String()
	}
	// Entries are cut at a count and at the output budget (long names,
	// symlink targets), whole, so the note below tells the truth.
	budget := OutputBudget(ctx) - listNoteRoom - len(rel)
	shown := entries[:min(len(entries), maxListEntries)]
	for i, e := range shown {
		line := l.describe(prefix, e) + "\n"
		if b.Len()+len(line) > budget && i > 0 {
			shown = shown[:i]
			break
		}
		b.WriteString(line)
	}
	if len(entries) > len(shown) {
		hint := "use glob to narrow"
		if d := firstDir(shown); d != "" {
			hint = fmt.Sprintf("list a subdirectory (e.g. path=%q) or use glob to narrow", path.Join(rel, d))
		}
		fmt.Fprintf(&b, "… %d of %d shown; %s\n", len(shown), len(entries), hint)
	}
	return b.String()
}

// checkDir makes sure rel is a directory that can be listed, and otherwise
// says what it is and what to do instead.
func (l *ListFiles) checkDir(ctx context.Context, rel string) error {
	if rel == "." {
		return nil
	}
	fi, err := l.ws.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		msg := fmt.Sprintf("%s: no such directory", rel)
		if files, ferr := l.ws.Files(ctx); ferr == nil {
			if s := suggestDirs(ctx, rel, files, 3); len(s) > 0 {
				msg += "; did you mean " + quoteList(s) + "?"
			}
		}
		return fmt.Errorf("%s. List the parent directory or use glob to find it: %w", msg, fs.ErrNotExist)
	case err != nil:
		return l.ws.openError(rel, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, rerr := l.ws.resolve(rel)
		if rerr != nil {
			return fmt.Errorf("%w: %s is a symlink that leads out of the repository", ErrOutside, rel)
		}
		return fmt.Errorf("%s is a symlink to %s; symlinked directories are not followed, list %q instead", rel, target, target)
	case !fi.IsDir():
		return fmt.Errorf("%s is a file, not a directory; read it with read_file", rel)
	}
	return nil
}

// describe renders one entry, marking symlinks "name@ -> target".
func (l *ListFiles) describe(prefix, entry string) string {
	if strings.HasSuffix(entry, "/") {
		return entry
	}
	full := prefix + entry
	fi, err := l.ws.root.Lstat(full)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return entry
	}
	target, err := l.ws.root.Readlink(full)
	if err != nil {
		return entry + "@"
	}
	if _, rerr := l.ws.resolve(full); errors.Is(rerr, ErrOutside) {
		return entry + "@ -> " + target + " (outside the workspace)"
	}
	return entry + "@ -> " + target
}

// Summarize gives the count from the header line: "12 entries".
func (l *ListFiles) Summarize(output string) string {
	first, _, _ := strings.Cut(output, "\n")
	if i := strings.LastIndexByte(first, '('); i >= 0 {
		s := strings.TrimSuffix(first[i+1:], ")")
		s, _, _ = strings.Cut(s, ",")
		return s
	}
	return countLines(output)
}

func firstDir(entries []string) string {
	for _, e := range entries {
		if d, _, ok := strings.Cut(e, "/"); ok {
			return d
		}
	}
	return ""
}

func nounFor(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// suggestDirs is suggestPaths for directories: it offers directories
// holding listable files.
func suggestDirs(ctx context.Context, want string, files []string, n int) []string {
	seen := make(map[string]bool)
	var dirs []string
	for _, f := range files {
		for d := path.Dir(f); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return suggestPaths(ctx, want, dirs, n)
}
