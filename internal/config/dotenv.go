package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/joho/godotenv"
)

// DotEnv reads the .env file at path (NAME=value lines, as godotenv reads
// them). A file that does not exist is an error wrapping fs.ErrNotExist;
// the caller knows whether it was asked for. One that does not parse stops
// every command, so the error names the file's absolute path and line (the
// directory it was found in is often not the one the reader thinks of) and
// never its text, which holds secrets.
func DotEnv(path string) (map[string]string, error) {
	abs := path
	if a, err := filepath.Abs(path); err == nil {
		abs = a
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", abs, errors.Unwrap(err))
	}
	dot, err := godotenv.UnmarshalBytes(content)
	if err != nil {
		return nil, fmt.Errorf("read %s: %s; fix the line or remove the file (real environment variables also work)", abs, dotenvProblem(content, err))
	}
	return dot, nil
}

// Over returns a lookup of env that falls back to dot for the names env
// does not have: a variable set in the real environment always wins, as
// godotenv.Load does, but the process environment is never changed.
func Over(env func(string) (string, bool), dot map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v, ok := env(name); ok {
			return v, true
		}
		v, ok := dot[name]
		return v, ok
	}
}

// godotenv's parse errors quote the rest of the file from the bad
// statement on, secrets included.
var dotenvBadChar = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^unexpected character ("(?:[^"\\]|\\.)*") in variable name near ("(?:[^"\\]|\\.)*")$`)
})

// dotenvProblem describes a .env parse error by line, without the file's
// text.
func dotenvProblem(content []byte, err error) string {
	src := strings.ReplaceAll(string(content), "\r\n", "\n") // as godotenv reads it
	lineOf := func(rest string) string {
		if rest == "" || !strings.HasSuffix(src, rest) {
			return ""
		}
		return fmt.Sprintf("line %d: ", 1+strings.Count(src[:len(src)-len(rest)], "\n"))
	}
	msg := err.Error()
	if m := dotenvBadChar().FindStringSubmatch(msg); m != nil {
		char, _ := strconv.Unquote(m[1])
		near, _ := strconv.Unquote(m[2])
		return fmt.Sprintf("%sunexpected character %q in a variable name (want NAME=value)", lineOf(near), char)
	}
	if value, ok := strings.CutPrefix(msg, "unterminated quoted value "); ok {
		line := ""
		if i := strings.LastIndex(src, value); i >= 0 {
			line = lineOf(src[i:])
		}
		return line + "a quoted value has no closing quote"
	}
	if _, ok := errors.AsType[*os.PathError](err); ok {
		return msg // the file could not be read: no content in it
	}
	return "cannot parse it"
}
