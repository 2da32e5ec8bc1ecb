package config

import "log/slog"

// Secret is a credential. It prints as "[redacted]" through fmt, slog and
// JSON so that a config dumped into a log or an error never leaks a token;
// Reveal is the one place the value comes out, at the call that needs it.
type Secret string

const redacted = "[redacted]"

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return s.String() }

// LogValue keeps slog from printing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText keeps encoding/json and YAML from printing the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the credential itself.
func (s Secret) Reveal() string { return string(s) }

// Set reports whether a value was given.
func (s Secret) Set() bool { return s != "" }
