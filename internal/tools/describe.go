package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// describeLimit is the most runes of a call's short form: it shares a
// context line with the tool's name and its summary.
const describeLimit = 80

// Describe gives a call's arguments in the short form a person reads on a
// context line: the tool's own (Describer), or for a tool it does not know
// or arguments that are not a JSON object, the generic form, with the
// arguments shown raw when they do not decode, since a model's broken JSON
// is worth seeing. The answer is one line of at most 80 runes: nothing the
// model wrote can start a line of its own.
func (r *Registry) Describe(call Call) string {
	var s string
	if d, ok := r.tools[call.Name].(Describer); ok {
		if _, ok := parseArgsForm(call.Input); ok {
			s = d.Describe(call.Input)
		}
	}
	if s == "" {
		s = genericArgs(call.Name, call.Input)
	}
	if strings.ContainsFunc(s, isBreak) {
		s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || isBreak(r) }), " ")
	}
	return clipArgs(s, describeLimit)
}

// isBreak reports a rune that could end a line or move the cursor: white
// space other than a space, or a control character.
func isBreak(r rune) bool {
	return r != ' ' && (unicode.IsSpace(r) || unicode.IsControl(r))
}

// argsForm is a call's arguments decoded for showing them: a Describer
// takes its own keys with str, num and flag, in the order it shows them,
// and rest shows what is left as key=value pairs, so an argument the tool
// does not know is still seen.
type argsForm struct {
	obj map[string]any
}

// parseArgsForm decodes input, a JSON object; empty input and null are
// taken for {} as ParseArgs takes them. ok is false for anything else.
func parseArgsForm(input json.RawMessage) (f argsForm, ok bool) {
	raw := bytes.TrimSpace(input)
	if len(raw) == 0 {
		return argsForm{}, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&f.obj); err != nil || dec.More() || f.obj == nil && string(raw) != "null" {
		return argsForm{}, false
	}
	return f, true
}

// str takes the first of keys holding a string that is not blank, on one
// line; "" if none does.
func (f argsForm) str(keys ...string) string {
	for _, k := range keys {
		if v, ok := f.obj[k].(string); ok && strings.TrimSpace(v) != "" {
			delete(f.obj, k)
			return oneLineArgs(v)
		}
	}
	return ""
}

// num takes the first of keys holding an integer.
func (f argsForm) num(keys ...string) (int64, bool) {
	for _, k := range keys {
		if v, ok := f.obj[k].(json.Number); ok {
			if n, err := v.Int64(); err == nil {
				delete(f.obj, k)
				return n, true
			}
		}
	}
	return 0, false
}

// flag takes key when it holds a boolean.
func (f argsForm) flag(key string) (on, ok bool) {
	if v, ok := f.obj[key].(bool); ok {
		delete(f.obj, key)
		return v, true
	}
	return false, false
}

// rest appends the keys not taken, sorted: "key=value", a flag that is on
// as its name alone, a flag that is off not at all.
func (f argsForm) rest(b *strings.Builder) string {
	keys := make([]string, 0, len(f.obj))
	for k := range f.obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := f.obj[k]
		if on, ok := v.(bool); ok && !on {
			continue // flags are off unless given; "literal=false" is noise
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		if _, ok := v.(bool); ok {
			b.WriteString(k) // a flag that is on: "ignore_case"
			continue
		}
		b.WriteString(k + "=" + argValue(v))
	}
	return b.String()
}

// patternIn appends "\"pattern\" in dir", the pattern or the directory
// alone when only one is given, and says whether it wrote anything.
func patternIn(b *strings.Builder, pattern, dir string) bool {
	switch {
	case pattern != "":
		b.WriteString(`"` + pattern + `"`)
		if dir != "" {
			b.WriteString(" in " + dir)
		}
	case dir != "":
		b.WriteString(dir)
	default:
		return false
	}
	return true
}

// describeFile is the short form of a call about one path: the path, then
// what lines gives of the lines asked for (lines may be nil), then the
// other arguments as key=value pairs. Without a path, lines is not asked,
// so its keys show as pairs too.
func describeFile(input json.RawMessage, lines func(argsForm) string) string {
	f, _ := parseArgsForm(input)
	var b strings.Builder
	if p := f.str("path"); p != "" {
		b.WriteString(p)
		if lines != nil {
			b.WriteString(lines(f))
		}
	}
	return f.rest(&b)
}

// pageRange is ":first-last" for a page given as an offset (1-based, 0
// taken for 1) and a count of lines, ":offset-" for an offset alone.
func pageRange(offset int64, hasOffset bool, count int64, hasCount bool) string {
	if hasCount && count > 0 {
		first := max(offset, 1)
		return fmt.Sprintf(":%d-%d", first, first+count-1)
	} else if hasOffset {
		return fmt.Sprintf(":%d-", offset)
	}
	return ""
}

// Argument keys the generic form recognises, most specific first. Tools
// name the same idea differently; these cover ours and the common
// spellings models fall back to.
var (
	pathArgKeys    = []string{"path", "file_path", "file", "filename", "dir", "directory"}
	patternArgKeys = []string{"pattern", "query", "regex", "search"}
	includeArgKeys = []string{"include", "glob", "file_pattern", "files"}
)

// genericArgs is the short form of a call no Describer gives: a pattern
// quoted, a path, a page of lines, an include glob in parentheses,
// "(recursive)", and the other keys as key=value pairs; arguments that are
// not a JSON object are shown raw.
func genericArgs(toolName string, input json.RawMessage) string {
	f, ok := parseArgsForm(input)
	if !ok {
		return clipArgs(oneLineArgs(string(input)), describeLimit)
	}
	var b strings.Builder
	pattern, path, include := f.str(patternArgKeys...), f.str(pathArgKeys...), f.str(includeArgKeys...)
	if !patternIn(&b, pattern, path) && strings.HasPrefix(toolName, "list") {
		b.WriteString(".") // listing with no path lists the checkout root
	}
	if path != "" && pattern == "" {
		offset, hasOffset := f.num("offset", "start_line", "line")
		if limit, ok := f.num("limit"); ok && limit > 0 {
			b.WriteString(pageRange(offset, hasOffset, limit, true))
		} else if end, ok := f.num("end_line"); ok {
			fmt.Fprintf(&b, ":%d-%d", max(offset, 1), end)
		} else if hasOffset {
			fmt.Fprintf(&b, ":%d-", offset)
		}
	}
	if include != "" {
		b.WriteString(" (" + include + ")")
	}
	if on, ok := f.flag("recursive"); ok && on {
		b.WriteString(" (recursive)")
	}
	return clipArgs(f.rest(&b), describeLimit)
}

// argValue prints one argument value: strings bare unless they hold spaces
// or "=", anything else as compact JSON.
func argValue(v any) string {
	if s, ok := v.(string); ok {
		s = oneLineArgs(s)
		if s == "" || strings.ContainsAny(s, " =") {
			return strconv.Quote(s)
		}
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(buf.String())
}

// oneLineArgs collapses every run of white space, line breaks included,
// into one space.
func oneLineArgs(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clipArgs cuts s to at most limit runes, ending in "…" when something was
// cut, after a space when there is one in the second half of what is kept.
func clipArgs(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	n, end, lastSpace := 0, 0, -1
	for i, r := range s {
		if n+1 > limit-1 {
			break
		}
		n++
		end = i + utf8.RuneLen(r)
		if r == ' ' {
			lastSpace = end
		}
	}
	if lastSpace > end/2 {
		end = lastSpace
	}
	return strings.TrimRight(s[:end], " ") + "…"
}
