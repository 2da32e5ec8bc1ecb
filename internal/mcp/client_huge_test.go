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
	// What fits is read as before, once the connection the cut response
	// broke is made again (the server is checked and restarted by itself,
	// the first time after a second).
	var res2 = f.call(tb, "big__search", `{"query":"flaky"}`, 30*time.Second)
	for deadline := time.Now().Add(15 * time.Second); res2.IsError && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		res2 = f.call(tb, "big__search", `{"query":"flaky"}`, 30*time.Second)
	}
	if res2.IsError || res2.Content != "found: flaky" {
		t.Errorf("search after the huge response = %+v", res2)
	}
}
