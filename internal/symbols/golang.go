package symbols

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// Ident is one identifier in a file: where a name is used or defined.
// Lines are 1-based.
type Ident struct {
	Name string
	Line int
	Def  bool
}

// File is what reading one file gives: its definitions in line order and
// its identifiers in line order.
type File struct {
	Symbols []Symbol
	Idents  []Ident
}

// maxSignature clips a signature or a line of text: a generated table on
// one line must not fill a result.
const maxSignature = 200

// Go reads a Go file exactly, through go/parser: its top-level functions,
// methods (Container is the receiver's type), types, constants and
// variables, the fields and methods of its struct and interface types
// (Container is the type), and every identifier in its code. Comments and
// strings are not identifiers, so they are never occurrences. A file that
// does not parse gives what the parser recovered and its error.
func Go(path string, src []byte) (File, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if f == nil {
		return File{}, err
	}
	r := goReader{
		fset:  fset,
		src:   src,
		lines: lineStarts(src),
		base: Symbol{
			Path:      path,
			Lang:      "go",
			Test:      strings.HasSuffix(path, "_test.go"),
			Generated: ast.IsGenerated(f),
		},
		defs: map[*ast.Ident]bool{},
		// About one identifier per ten bytes of Go: grown once, if at all.
		ids: make([]Ident, 0, len(src)/10),
	}
	for _, d := range f.Decls {
		r.decl(d)
	}
	r.idents(f)
	return File{Symbols: r.syms, Idents: r.ids}, err
}

type goReader struct {
	fset  *token.FileSet
	src   []byte
	lines []int
	base  Symbol
	syms  []Symbol
	ids   []Ident
	defs  map[*ast.Ident]bool // identifiers that define a name
}

func (r *goReader) line(p token.Pos) int { return r.fset.PositionFor(p, false).Line }

func (r *goReader) add(name *ast.Ident, kind, container string, start, end token.Pos, doc *ast.CommentGroup) {
	r.defs[name] = true
	if name.Name == "_" {
		return
	}
	s := r.base
	s.Name, s.Kind, s.Container = name.Name, kind, container
	s.Line, s.EndLine = r.line(start), r.line(end)
	s.Signature = clip(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(lineText(r.src, r.lines, s.Line)), "{")))
	s.Doc = firstDocLine(doc)
	s.Exported = token.IsExported(name.Name) && (container == "" || token.IsExported(container))
	r.syms = append(r.syms, s)
}

func (r *goReader) decl(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		kind, container := "func", ""
		if d.Recv != nil && len(d.Recv.List) > 0 {
			kind, container = "method", receiverType(d.Recv.List[0].Type)
		}
		r.add(d.Name, kind, container, d.Pos(), d.End(), d.Doc)
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			doc := specDoc(d, spec)
			switch s := spec.(type) {
			case *ast.TypeSpec:
				start := s.Pos()
				if len(d.Specs) == 1 {
					start = d.Pos()
				}
				r.add(s.Name, typeKind(s.Type), "", start, s.End(), doc)
				r.members(s)
			case *ast.ValueSpec:
				kind := "var"
				if d.Tok == token.CONST {
					kind = "const"
				}
				start := s.Pos()
				if len(d.Specs) == 1 {
					start = d.Pos()
				}
				for _, n := range s.Names {
					r.add(n, kind, "", start, s.End(), doc)
				}
			}
		}
	}
}

// members adds the fields of a struct type and the methods of an
// interface type.
func (r *goReader) members(s *ast.TypeSpec) {
	var list *ast.FieldList
	kind := "field"
	switch t := s.Type.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, kind = t.Methods, "method"
	}
	if list == nil {
		return
	}
	for _, f := range list.List {
		doc := f.Doc
		if doc == nil {
			doc = f.Comment
		}
		for _, n := range f.Names {
			r.add(n, kind, s.Name.Name, f.Pos(), f.End(), doc)
		}
	}
}

// idents records every identifier, marking those that define a name:
// declarations, parameters, results and the left of :=.
func (r *goReader) idents(f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			for _, id := range n.Names {
				r.defs[id] = true
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				r.defs[id] = true
			}
		case *ast.TypeSpec:
			r.defs[n.Name] = true
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						r.defs[id] = true
					}
				}
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						r.defs[id] = true
					}
				}
			}
		case *ast.Ident:
			if n.Name != "_" {
				r.ids = append(r.ids, Ident{Name: n.Name, Line: r.line(n.Pos()), Def: r.defs[n]})
			}
		}
		return true
	})
}

// specDoc is a spec's own doc comment, or its declaration's when the
// declaration holds only this spec.
func specDoc(d *ast.GenDecl, spec ast.Spec) *ast.CommentGroup {
	var doc *ast.CommentGroup
	switch s := spec.(type) {
	case *ast.TypeSpec:
		doc = s.Doc
	case *ast.ValueSpec:
		doc = s.Doc
		if doc == nil && d.Lparen.IsValid() {
			doc = s.Comment
		}
	}
	if doc == nil && len(d.Specs) == 1 {
		doc = d.Doc
	}
	return doc
}

func typeKind(e ast.Expr) string {
	switch e.(type) {
	case *ast.StructType:
		return "struct"
	case *ast.InterfaceType:
		return "interface"
	}
	return "type"
}

// receiverType is the name of a receiver's type: T for T, *T, T[K] and
// *T[K, V].
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func firstDocLine(doc *ast.CommentGroup) string {
	if doc == nil {
		return ""
	}
	text := strings.TrimSpace(doc.Text())
	first, _, _ := strings.Cut(text, "\n")
	return clip(strings.TrimSpace(first))
}

// lineStarts returns the offset of each line's first byte.
func lineStarts(src []byte) []int {
	starts := make([]int, 1, bytes.Count(src, []byte{'\n'})+1)
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineText is line n (1-based) of src without its line end, or "".
func lineText(src []byte, starts []int, n int) string {
	if n < 1 || n > len(starts) {
		return ""
	}
	end := len(src)
	if n < len(starts) {
		end = starts[n]
	}
	return strings.TrimRight(string(src[starts[n-1]:end]), "\r\n")
}

// Lines finds the lines of a file by number, to show the line of an
// occurrence.
type Lines struct {
	src    []byte
	starts []int
}

// NewLines indexes the lines of src.
func NewLines(src []byte) Lines { return Lines{src: src, starts: lineStarts(src)} }

// Text is line n (1-based), trimmed and clipped to a few hundred bytes,
// or "" past the end.
func (l Lines) Text(n int) string {
	return clip(strings.TrimSpace(lineText(l.src, l.starts, n)))
}

// clip cuts s to maxSignature bytes at a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= maxSignature {
		return s
	}
	cut := maxSignature
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
