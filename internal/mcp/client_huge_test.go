package mcp

import (
	"strings"
	"testing"
	"time"
)

// A server cannot fill askrepo's memory: a response over the limit is
// not read on, and the call fails saying so, as a model's answer over its
// limit is cut off.
func TestClientResponseOverTheLimit(t *testing.T) {
	f := newClientFixture(t, 10*time.Second, httpSpec("big", newTestHTTPServer(t, httpAuth).URL))
	f.c.opts.maxResponse = testHugeResult / 4
	tb := f.toolbox("")
	res := f.call(tb, "big__huge", `{}`, 30*time.Second)
	if !res.IsError || !strings.Contains(res.Content, "larger than") {
		t.Errorf("a %d-byte response over a %d-byte limit: %v %.300s", testHugeResult, f.c.opts.maxResponse, res.IsError, res.Content)
	}
	// What fits is read as before.
	if res := f.call(tb, "big__search", `{"query":"flaky"}`, 30*time.Second); res.IsError || res.Content != "found: flaky" {
		t.Errorf("search after the huge response = %+v", res)
	}
}
