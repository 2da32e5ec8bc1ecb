// Package symbols reads the definitions and identifier occurrences of source
// files: Go through go/parser (exact), other languages through
// universal-ctags' JSON output. The code index builds on it, and the symbol
// tools use it to answer from a scan while no index is ready.
//
// It imports no other internal package: it reads the content it is given
// (ctags too is fed content, never a path to open) and never decides what
// may be read; the caller has already put each file through the
// workspace's wall.
package symbols

// Symbol is one definition.
type Symbol struct {
	Name string
	// Kind is the kind of definition: func, method, type, interface,
	// struct, const, var, field, class, function, module …
	Kind string
	// Container is the enclosing type or class ("Client" for Client.Do), or
	// "".
	Container string
	// Signature is the definition's first line as written, trimmed
	// ("func (c *Client) Do(req *Request) (*Response, error)").
	Signature string
	Path      string // slash-separated, relative to the workspace root
	Line      int    // 1-based first line
	EndLine   int    // last line; Line when not known
	Doc       string // the first line of its doc comment, or ""
	Lang      string // "go", or the language ctags names
	Exported  bool
	Test      bool // defined in a test file
	Generated bool // defined in a generated file
}

// Occurrence is one use (or the definition) of an identifier.
type Occurrence struct {
	Path string
	Line int
	Def  bool
	// Text is the line, trimmed, clipped to a few hundred bytes.
	Text string
}
