// Command symacc measures how often find_symbol puts a definition first
// (top-1) or among its first five hits (top-5). It samples, seeded, names
// defined exactly once in a tree and asks find_symbol for each through the
// registry the model's calls go through (tools.Default over an index.Build
// of the tree, as the service builds it). A hit is the definition's
// path:line among the first 1 or 5 lines of the result.
//
//	go build -o /tmp/symacc ./bench/cmd/symacc
//	/tmp/symacc -dir DIR [-n 500] [-seed 1] [-lang go|ctags] [-misses]
//
// With -lang go (the default) the definitions are top-level functions,
// methods (asked for as Type.Method) and types read with go/parser from
// the tree's .go files outside tests; unique means the name, or
// Type.Method, is defined once among them. With -lang ctags they are
// universal-ctags' own tags of the tree (functions, classes, methods,
// members, structs, macros …), unique by name among all its tags, so the
// check is that the index serves what ctags finds. -misses prints each
// miss (rank 0: not among the hits shown) with the hit that came first.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/tools"
)

// def is one sampled definition: what to ask for and where it is.
type def struct {
	Query string // name, or Type.Method
	Kind  string
	Path  string // slash-separated, relative to the tree
	Line  int
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "symacc:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "the tree")
	n := flag.Int("n", 500, "definitions to sample")
	seed := flag.Uint64("seed", 1, "seed of the sample")
	lang := flag.String("lang", "go", "go (go/parser) or ctags (universal-ctags' tags)")
	misses := flag.Bool("misses", false, "print every miss and the result's first line")
	flag.Parse()
	if *dir == "" {
		return fmt.Errorf("-dir is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var defs []def
	var err error
	switch *lang {
	case "go":
		defs, err = goDefs(*dir)
	case "ctags":
		defs, err = ctagsDefs(ctx, *dir)
	default:
		err = fmt.Errorf("-lang is go or ctags, not %q", *lang)
	}
	if err != nil {
		return err
	}
	pool := len(defs)
	r := rand.New(rand.NewPCG(*seed, *seed))
	r.Shuffle(len(defs), func(i, j int) { defs[i], defs[j] = defs[j], defs[i] })
	defs = defs[:min(*n, len(defs))]

	ws, err := tools.NewWorkspace(*dir, tools.WorkspaceOptions{})
	if err != nil {
		return err
	}
	defer ws.Close()
	idx, err := index.Build(ctx, ws, "bench", index.Options{})
	if err != nil {
		return err
	}
	reg := tools.NewRegistry(tools.Default(ws, tools.Options{
		Index: func() (tools.CodeIndex, string) { return idx, "" },
	})...)
	top1, top5 := 0, 0
	for i, d := range defs {
		in, _ := json.Marshal(map[string]string{"name": d.Query})
		res := reg.Run(ctx, tools.Call{ID: strconv.Itoa(i), Name: tools.FindSymbolName, Input: in})
		hits := hitLines(res.Content)
		want := d.Path + ":" + strconv.Itoa(d.Line)
		at := slices.Index(hits, want)
		switch {
		case at == 0:
			top1++
			top5++
		case at > 0 && at < 5:
			top5++
		}
		if *misses && at != 0 {
			fmt.Printf("miss (rank %d of %d shown): %s %s at %s; first: %s\n", at+1, len(hits), d.Kind, d.Query, want, firstHit(res.Content))
		}
	}
	note := idx.Note()
	fmt.Printf("%s: %d unique definitions, %d sampled (seed %d): top-1 %d (%.1f%%), top-5 %d (%.1f%%)%s\n",
		*lang, pool, len(defs), *seed, top1, pct(top1, len(defs)), top5, pct(top5, len(defs)),
		cmp.Or(strings.TrimSpace(" "+note), ""))
	return nil
}

func pct(k, n int) float64 { return 100 * float64(k) / float64(max(n, 1)) }

// firstHit is the first hit's line, or the result's first line when it
// has none.
func firstHit(content string) string {
	lines := strings.Split(content, "\n")
	for _, line := range lines {
		if hitRE.MatchString(line) {
			return line
		}
	}
	return lines[0]
}

// hitRE is a hit's line in find_symbol's result: "path:line  kind  …".
var hitRE = regexp.MustCompile(`^(\S+:\d+)  `)

// hitLines returns the path:line of each hit, in the result's order.
func hitLines(content string) []string {
	var out []string
	for _, line := range strings.Split(content, "\n") {
		if m := hitRE.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// goDefs returns the top-level functions, methods and types of the .go
// files under dir, outside tests, whose name (Type.Method for a method) is
// defined once among them. Files that do not parse (testdata) are skipped.
func goDefs(dir string) ([]def, error) {
	fset := token.NewFileSet()
	byKey := map[string][]def{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		add := func(key, kind string, name *ast.Ident) {
			byKey[key] = append(byKey[key], def{key, kind, rel, fset.Position(name.Pos()).Line})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name.Name, "func", d.Name)
				} else if len(d.Recv.List) == 1 && recvName(d.Recv.List[0].Type) != "" {
					recv := recvName(d.Recv.List[0].Type)
					add(recv+"."+d.Name.Name, "method", d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						add(ts.Name.Name, "type", ts.Name)
					}
				}
			}
		}
		return nil
	})
	return unique(byKey), err
}

// recvName is the type name of a method's receiver: T in T, *T, T[K], (*T).
// It is written here again, not taken from internal/symbols, so that what
// the sample expects is read independently of the index it checks.
func recvName(x ast.Expr) string {
	for {
		switch t := x.(type) {
		case *ast.StarExpr:
			x = t.X
		case *ast.ParenExpr:
			x = t.X
		case *ast.IndexExpr:
			x = t.X
		case *ast.IndexListExpr:
			x = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// unique returns the definitions whose key has exactly one, sorted so the
// seeded shuffle does not depend on map order.
func unique(byKey map[string][]def) []def {
	var out []def
	for _, ds := range byKey {
		if len(ds) == 1 {
			out = append(out, ds[0])
		}
	}
	slices.SortFunc(out, func(a, b def) int { return cmp.Compare(a.Query, b.Query) })
	return out
}

// ctagsKinds are the tags sampled from ctags: definitions a model would
// look up, not variables, imports or headings.
var ctagsKinds = map[string]bool{
	"function": true, "class": true, "member": true, "method": true, "struct": true,
	"macro": true, "typedef": true, "union": true, "enum": true, "interface": true,
}

// ctagsDefs runs universal-ctags over dir and returns its definitions whose
// name occurs once among all its tags.
func ctagsDefs(ctx context.Context, dir string) ([]def, error) {
	cmd := exec.CommandContext(ctx, "ctags", "-R", "--output-format=json", "--fields=+nK", "--exclude=.git", "-f", "-", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ctags: %w", err)
	}
	byKey := map[string][]def{}
	for _, line := range strings.Split(string(out), "\n") {
		var t struct {
			Type string `json:"_type"`
			Name string `json:"name"`
			Path string `json:"path"`
			Kind string `json:"kind"`
			Line int    `json:"line"`
		}
		if json.Unmarshal([]byte(line), &t) != nil || t.Type != "tag" {
			continue
		}
		d := def{t.Name, t.Kind, filepath.ToSlash(t.Path), t.Line}
		if !ctagsKinds[t.Kind] {
			d.Kind = "" // counts against uniqueness, never sampled
		}
		byKey[t.Name] = append(byKey[t.Name], d)
	}
	for k, ds := range byKey {
		if len(ds) == 1 && ds[0].Kind == "" {
			delete(byKey, k)
		}
	}
	return unique(byKey), nil
}
