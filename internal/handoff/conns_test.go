//go:build linux

package handoff

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// Connections that send nothing (a stuck or hostile client of the same
// user, in a loop) are bounded like running calls: past a few, one more
// is turned away at once instead of costing a goroutine, a descriptor and
// up to a request's worth of buffer each.
func TestIdleConnectionsAreBounded(t *testing.T) {
	dir, _ := serve(t, echo, Options{MaxConcurrent: 1})
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 200 {
		c, err := net.Dial("unix", Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	c, err := net.Dial("unix", Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Well before the service would give up on the idle ones.
	c.SetReadDeadline(time.Now().Add(ioTimeout / 2))
	var resp Response
	if err := json.NewDecoder(c).Decode(&resp); err != nil || !strings.Contains(resp.Refused, "busy") {
		t.Fatalf("a connection past 200 idle ones: %+v, %v; want a busy refusal at once", resp, err)
	}
}

// Close does not wait on clients: one that connected and sends nothing,
// or one that does not read its result, is cut off at once rather than
// holding bot serve's stop for the socket's I/O timeout.
func TestCloseDoesNotWaitOnClients(t *testing.T) {
	defer func(d time.Duration) { ioTimeout = d }(ioTimeout)
	ioTimeout = time.Hour
	big := strings.Repeat("x", 8<<20)
	dir, srv := serve(t, func(context.Context, Request, func(string)) Response {
		return Response{Content: big}
	}, Options{})
	silent, err := net.Dial("unix", Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	deaf, err := net.Dial("unix", Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer deaf.Close()
	if err := json.NewEncoder(deaf).Encode(Request{Tool: "x"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the service takes both
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waits on a client that sends nothing or reads nothing")
	}
}
