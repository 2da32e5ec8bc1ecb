// Package logtest collects log output while a test runs (Buffer) and
// checks it as an operator reads it: it parses each line as the JSON object
// a log shipper would, and rejects lines that are not objects, keys that
// appear twice and values that say nothing.
//
// It is imported only from tests, and imports no other internal package.
package logtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// Lines parses every line of logs as one JSON object and reports, through
// t, a line that is not one, a key that appears twice in an object
// (encoding/json keeps the last silently, and so do most log viewers), an
// empty string value (a key that says nothing), and a value of one of
// durationKeys that is not a Go duration string ("1m30s").
func Lines(t testing.TB, logs string, durationKeys ...string) []map[string]any {
	t.Helper()
	isDuration := map[string]bool{}
	for _, k := range durationKeys {
		isDuration[k] = true
	}
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if dup := DuplicateKeys(line); len(dup) > 0 {
			t.Errorf("keys %v appear twice in %s", dup, line)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Errorf("log line is not JSON: %s", line)
			continue
		}
		for k, v := range m {
			if v == "" {
				t.Errorf("empty %q in %s", k, line)
			}
			if !isDuration[k] {
				continue
			}
			if s, ok := v.(string); !ok {
				t.Errorf("%s = %v, want a Go duration string, in %s", k, v, line)
			} else if _, err := time.ParseDuration(s); err != nil {
				t.Errorf("%s = %q, want a Go duration string, in %s", k, s, line)
			}
		}
		out = append(out, m)
	}
	return out
}

// DuplicateKeys returns the keys that appear more than once in one object
// of a JSON document, at any depth.
func DuplicateKeys(doc []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var dups []string
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if seen[key] {
					dups = append(dups, key)
				}
				seen[key] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(); err != nil && !errors.Is(err, io.EOF) {
		return []string{"<not JSON: " + err.Error() + ">"}
	}
	return dups
}
