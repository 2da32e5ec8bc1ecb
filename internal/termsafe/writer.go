package termsafe

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer escapes everything written to it (see Append) before passing it
// on. A character split across two Writes, as a stream delivers text, is
// escaped as one: the incomplete end of a Write, and a final \r that may be
// the first half of \r\n, wait for the next Write or for Flush.
//
// Raw passes the caller's own sequences (colours) through unchanged. A
// Writer is safe for concurrent use; each Write and Raw reaches the
// underlying writer whole.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte
	buf  []byte
}

// NewWriter returns a Writer escaping onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes what can be judged so far. It reports len(p)
// written unless the underlying writer failed.
func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := p
	if len(s.held) > 0 {
		data = append(s.held, p...)
		s.held = nil
	}
	n := complete(data)
	if n < len(data) {
		s.held = append([]byte(nil), data[n:]...)
	}
	if n == 0 {
		return len(p), nil
	}
	s.buf = Append(s.buf[:0], data[:n])
	if _, err := s.w.Write(s.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Raw writes p unescaped, after whatever an earlier Write held back
// (escaped as it stands). Only the program's own constant sequences belong
// here, never text from elsewhere.
func (s *Writer) Raw(p string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.flush(); err != nil {
		return err
	}
	_, err := io.WriteString(s.w, p)
	return err
}

// Flush writes what an earlier Write held back, escaped as it stands: an
// incomplete character becomes its \xNN bytes.
func (s *Writer) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flush()
}

func (s *Writer) flush() error {
	if len(s.held) == 0 {
		return nil
	}
	s.buf = Append(s.buf[:0], s.held)
	s.held = nil
	_, err := s.w.Write(s.buf)
	return err
}

// complete is the length of the prefix of p that can be escaped now: all
// of it but an incomplete UTF-8 sequence or a \r at its end.
func complete(p []byte) int {
	n := len(p)
	if n > 0 && p[n-1] == '\r' {
		return n - 1
	}
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return i
			}
			break
		}
	}
	return n
}
