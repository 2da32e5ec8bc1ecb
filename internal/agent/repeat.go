package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// callKey identifies a call by tool name and canonical arguments, so
// {"path":"a","limit":5} and { "limit": 5, "path": "a" } count as the same
// call. Arguments that are not valid JSON are used as they are (trimmed):
// the tool will reject them, and repeating the same bad call is still a
// repeat.
func callKey(name string, args []byte) string {
	return name + "\x00" + canonicalJSON(args)
}

// canonicalJSON re-encodes a JSON value with object keys sorted (encoding/json
// sorts map keys) and insignificant white space removed. Numbers are kept as
// written, so 1 and 1.0 differ, which errs on the side of running a call.
func canonicalJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// repeats counts the calls of one turn, to stop a model that asks for the
// same thing again and again: each repeat costs a step and tokens and
// teaches it nothing new.
type repeats struct {
	max  int
	seen map[string]int
}

// allow counts the call and reports whether it may run: the first max
// identical calls of a turn do, later ones do not.
func (r *repeats) allow(name string, args []byte) bool {
	if r.seen == nil {
		r.seen = make(map[string]int)
	}
	k := callKey(name, args)
	if r.seen[k] >= r.max {
		return false
	}
	r.seen[k]++
	return true
}

func repeatMessage(name string, times int) string {
	return fmt.Sprintf("not run: you already called %s with exactly these arguments %d times in this turn, and the result is above. Use that result, or try something different (other arguments or another tool).", name, times)
}
