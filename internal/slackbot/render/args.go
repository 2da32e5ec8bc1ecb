package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Argument keys CompactArgs recognises, most specific first. Tools name the
// same idea differently; these cover ours and the common spellings models
// fall back to.
var (
	pathArgKeys    = []string{"path", "file_path", "file", "filename", "dir", "directory"}
	patternArgKeys = []string{"pattern", "query", "regex", "search"}
	includeArgKeys = []string{"include", "glob", "file_pattern", "files"}
)

// CompactArgs shows a call's arguments the way a person would write them:
// "README.md", "README.md:40-79" (offset 40, limit 40), "\"retry\" in
// internal/ (*.go)", "cmd/ (recursive)". Keys it does not know follow as
// key=value pairs, and arguments that are not a JSON object are shown raw,
// since a model's broken JSON is worth seeing. The result is at most about 80
// characters. Flags set to true show as their name alone.
func CompactArgs(toolName, argsJSON string) string {
	raw := strings.TrimSpace(argsJSON)
	var obj map[string]any
	if raw != "" {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil || dec.More() || obj == nil && raw != "null" {
			return clipText(oneLine(raw), maxArgsChars)
		}
	}
	str := func(keys []string) string {
		for _, k := range keys {
			if v, ok := obj[k].(string); ok && strings.TrimSpace(v) != "" {
				delete(obj, k)
				return oneLine(v)
			}
		}
		return ""
	}
	num := func(keys ...string) (int64, bool) {
		for _, k := range keys {
			if v, ok := obj[k].(json.Number); ok {
				if n, err := v.Int64(); err == nil {
					delete(obj, k)
					return n, true
				}
			}
		}
		return 0, false
	}

	var b strings.Builder
	pattern, path, include := str(patternArgKeys), str(pathArgKeys), str(includeArgKeys)
	switch {
	case pattern != "":
		b.WriteString(`"` + pattern + `"`)
		if path != "" {
			b.WriteString(" in " + path)
		}
	case path != "":
		b.WriteString(path)
	case strings.HasPrefix(toolName, "list"):
		b.WriteString(".") // listing with no path lists the checkout root
	}
	if path != "" && pattern == "" {
		// read_file's offset is 1-based and limit counts lines.
		offset, hasOffset := num("offset", "start_line", "line")
		if limit, ok := num("limit"); ok && limit > 0 {
			first := max(offset, 1)
			fmt.Fprintf(&b, ":%d-%d", first, first+limit-1)
		} else if end, ok := num("end_line"); ok {
			fmt.Fprintf(&b, ":%d-%d", max(offset, 1), end)
		} else if hasOffset {
			fmt.Fprintf(&b, ":%d-", offset)
		}
	}
	if include != "" {
		b.WriteString(" (" + include + ")")
	}
	if r, ok := obj["recursive"].(bool); ok {
		delete(obj, "recursive")
		if r {
			b.WriteString(" (recursive)")
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := obj[k]
		if f, ok := v.(bool); ok && !f {
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
	return clipText(b.String(), maxArgsChars)
}

// argValue prints one argument value: strings bare unless they hold spaces,
// anything else as compact JSON.
func argValue(v any) string {
	if s, ok := v.(string); ok {
		s = oneLine(s)
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
