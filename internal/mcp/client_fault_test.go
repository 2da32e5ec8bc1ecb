package mcp

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/tools"
)

// A stdio server gets none of askrepo's environment but what it needs to
// run and what its entry names; a credential it echoes, in a result or an
// error, reaches neither the model nor the log.
func TestClientStdioEnvironmentAndSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-parent-key-must-not-reach-a-server")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-parent-token")
	f := newClientFixture(t, 30*time.Second, stdioSpec("docs", "tools"))
	tb := f.toolbox("")
	res := f.call(tb, "docs__whoami", `{}`, 30*time.Second)
	if res.IsError || !strings.Contains(res.Content, "my environment") {
		t.Fatalf("whoami = %+v", res)
	}
	for _, leaked := range []string{"OPENAI_API_KEY", "sk-parent", "SLACK_BOT_TOKEN", "xoxb-"} {
		if strings.Contains(res.Content, leaked) {
			t.Errorf("the server's environment holds %q:\n%s", leaked, res.Content)
		}
	}
	if !strings.Contains(res.Content, "TEST_SECRET="+redactedText) || !strings.Contains(res.Content, "PATH=") {
		t.Errorf("the server lacks its own variable or PATH:\n%s", res.Content)
	}
	fail := f.call(tb, "docs__fail", `{}`, 30*time.Second)
	if !fail.IsError || !strings.Contains(fail.Content, "denied for") || !strings.Contains(fail.Content, redactedText) {
		t.Errorf("fail = %+v", fail)
	}
	checkNoSecret(t, "a result", res.Content, fail.Content, fail.Summary)
	checkNoSecret(t, "the log", f.logs.String())
}

// Over HTTP the headers are sent from the variables they name, and a
// server that quotes them back shows "[redacted]".
func TestClientHTTPHeadersAndSecrets(t *testing.T) {
	h := newTestHTTPServer(t, httpAuth)
	wrong := httpSpec("wrong", h.URL)
	wrong.Headers = map[string]string{"Authorization": "WRONG_AUTH"}
	f := newClientFixture(t, 10*time.Second, httpSpec("tickets", h.URL), wrong)
	tb := f.toolbox("")
	res := f.call(tb, "tickets__whoami", `{}`, 10*time.Second)
	if res.IsError || res.Content != "you sent Authorization: "+redactedText {
		t.Errorf("whoami = %+v", res)
	}
	fail := f.call(tb, "tickets__fail", `{}`, 10*time.Second)
	if !fail.IsError || !strings.Contains(fail.Content, redactedText) {
		t.Errorf("fail = %+v", fail)
	}
	if got := defNames(tb.Definitions()); strings.Contains(strings.Join(got, ","), "wrong__") {
		t.Errorf("a server that refused the credential offers tools: %v", got)
	}
	down := f.waitFor("wrong", "down", func(h ServerHealth) bool { return h.State == StateDown && h.Error != "" })
	health, _ := json.Marshal(f.c.Health())
	checkNoSecret(t, "a result", res.Content, fail.Content)
	checkNoSecret(t, "the log", f.logs.String())
	checkNoSecret(t, "/healthz", string(health))
	if strings.Contains(string(health), "not-the-right-one") || strings.Contains(f.logs.String(), "not-the-right-one") {
		t.Errorf("a wrong credential shows: %s", health)
	}
	t.Logf("refused server: %+v", down)
}

// A tool that never returns costs its call's timeout and nothing more: the
// call ends with the timeout, and the server, which still answers pings,
// keeps serving.
func TestClientHangingCall(t *testing.T) {
	h := newTestHTTPServer(t, httpAuth)
	f := newClientFixture(t, 10*time.Second, httpSpec("tickets", h.URL))
	tb := f.toolbox("")
	began := time.Now()
	res := f.call(tb, "tickets__hang", `{}`, 200*time.Millisecond)
	if !res.IsError || res.Summary != "timed out" {
		t.Errorf("hang = %+v", res)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("a hanging call took %s", took)
	}
	time.Sleep(2 * time.Second) // the ping the timeout set off has had its time
	if res := f.call(tb, "tickets__search", `{"query":"after"}`, 10*time.Second); res.IsError || res.Content != "found: after" {
		t.Errorf("after a hanging call: %+v", res)
	}
}

// A server that never answers the handshake does not hold the turn past
// the start timeout; it offers nothing, shows as down, and is tried again.
func TestClientSilentServer(t *testing.T) {
	f := newClientFixture(t, 300*time.Millisecond, stdioSpec("mute", "silent"))
	began := time.Now()
	tb := f.toolbox("")
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the turn waited %s for a silent server", took)
	}
	if got := defNames(tb.Definitions()); len(got) != 2 {
		t.Errorf("a silent server offers tools: %v", got)
	}
	h := f.waitFor("mute", "restarted", func(h ServerHealth) bool { return h.Restarts >= 1 })
	if !strings.Contains(h.Error, "no answer to the MCP handshake") {
		t.Errorf("health = %+v", h)
	}
}

// A stdio server that answers with one endless message cannot fill
// askrepo's memory: the SDK reads one message of a stdio server up to
// 16 MiB, so the server is down, and askrepo holds far less than the flood.
func TestClientStdioFloodIsBounded(t *testing.T) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f := newClientFixture(t, 2*time.Second, stdioSpec("flood", "flood"))
	tb := f.toolbox("")
	if got := defNames(tb.Definitions()); len(got) != 2 {
		t.Errorf("a flooding server offers tools: %v", got)
	}
	f.waitFor("flood", "down", func(h ServerHealth) bool { return h.State == "down" && h.Error != "" })
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// A down server is started again after a while: on a loaded machine
	// that may come before the wait above saw it down, and each start
	// reads a flood of its own.
	starts := int64(1)
	for _, h := range f.c.Health() {
		if h.Name == "flood" {
			starts += int64(h.Restarts)
		}
	}
	grew := (int64(after.TotalAlloc) - int64(before.TotalAlloc)) / starts
	t.Logf("allocated %d MiB per start reading a %d MiB flood (%d starts)", grew>>20, floodBytes>>20, starts)
	if grew > floodBytes/2 {
		t.Errorf("reading the flood allocated %d MiB per start; want it bounded far below the %d MiB sent", grew>>20, floodBytes>>20)
	}
}

// A command that cannot start, or exits at once, is down with the reason,
// and its stderr goes to the log scrubbed of its credentials.
func TestClientFailedStart(t *testing.T) {
	missing := stdioSpec("missing", "tools")
	missing.Command = "/nonexistent/mcp-server"
	f := newClientFixture(t, 10*time.Second, missing, stdioSpec("quits", "exit"))
	tb := f.toolbox("")
	if got := defNames(tb.Definitions()); len(got) != 2 {
		t.Errorf("servers that failed to start offer tools: %v", got)
	}
	h := f.waitFor("missing", "restarted", func(h ServerHealth) bool { return h.Restarts >= 2 })
	if h.State == StateReady || !strings.Contains(h.Error, "nonexistent") {
		t.Errorf("health = %+v", h)
	}
	f.waitFor("quits", "restarted", func(h ServerHealth) bool { return h.Restarts >= 1 })
	if logs := f.logs.String(); !strings.Contains(logs, "cannot start: bad token "+redactedText) {
		t.Errorf("the server's stderr is not in the log:\n%s", logs)
	}
	checkNoSecret(t, "the log", f.logs.String())
}

// A stdio server that dies in the middle of a call gives that call an
// error result; it is started again, and the same turn's tools work again.
func TestClientCrashMidCall(t *testing.T) {
	f := newClientFixture(t, 30*time.Second, stdioSpec("docs", "tools"))
	tb := f.toolbox("")
	res := f.call(tb, "docs__crash", `{}`, 30*time.Second)
	if !res.IsError || !strings.Contains(res.Content, "failed this call") {
		t.Errorf("crash = %+v", res)
	}
	f.waitFor("docs", "restarted", func(h ServerHealth) bool { return h.Restarts >= 1 && h.State == StateReady })
	if res := f.call(tb, "docs__search", `{"query":"again"}`, 30*time.Second); res.IsError || res.Content != "found: again" {
		t.Errorf("after the restart: %+v", res)
	}
}

// An HTTP server that drops the connection in a call, then goes away,
// gives error results, never a stuck call; its tools stay offered, so the
// request prefix does not change while it is down.
func TestClientHTTPServerGone(t *testing.T) {
	h := newTestHTTPServer(t, httpAuth)
	f := newClientFixture(t, 10*time.Second, httpSpec("tickets", h.URL))
	tb := f.toolbox("")
	if res := f.call(tb, "tickets__crash", `{}`, 10*time.Second); !res.IsError {
		t.Errorf("a dropped connection gave %+v", res)
	}
	h.stop()
	res := f.call(tb, "tickets__search", `{"query":"x"}`, 10*time.Second)
	if !res.IsError {
		t.Errorf("a call to a server that is gone: %+v", res)
	}
	f.waitFor("tickets", "down", func(h ServerHealth) bool { return h.State != StateReady })
	res = f.call(tb, "tickets__search", `{"query":"x"}`, 10*time.Second)
	if !res.IsError || !strings.Contains(res.Content, "not available right now") {
		t.Errorf("a call while it is down: %+v", res)
	}
	if got := defNames(f.toolbox("").Definitions()); !strings.Contains(strings.Join(got, ","), "tickets__search") {
		t.Errorf("a server that is down stopped offering its tools: %v", got)
	}
}

// A huge result is cut to the output limit as a built-in tool's is, saying
// what was cut.
func TestClientHugeResult(t *testing.T) {
	for _, tc := range []struct{ name, spec string }{{"http", "http"}, {"stdio", "stdio"}} {
		t.Run(tc.name, func(t *testing.T) {
			var f *clientFixture
			if tc.spec == "http" {
				f = newClientFixture(t, 10*time.Second, httpSpec("big", newTestHTTPServer(t, httpAuth).URL))
			} else {
				f = newClientFixture(t, 30*time.Second, stdioSpec("big", "tools"))
			}
			res := f.call(f.toolbox(""), "big__huge", `{}`, 30*time.Second)
			if res.IsError {
				t.Fatalf("huge = %s", res.Content[:min(len(res.Content), 500)])
			}
			if len(res.Content) > tools.DefaultOutputLimit+512 || !strings.Contains(res.Content, "[cut: lines") {
				t.Errorf("a %d-byte result reached the model as %d bytes:\n%s", testHugeResult, len(res.Content), res.Content[:300])
			}
			if !strings.HasPrefix(res.Content, "line 0 of a very long result\n") {
				t.Errorf("result starts %q", res.Content[:60])
			}
		})
	}
}

// Arguments that are not a JSON object are the model's to fix.
func TestClientBadArguments(t *testing.T) {
	f := newClientFixture(t, 10*time.Second, httpSpec("tickets", newTestHTTPServer(t, httpAuth).URL))
	for _, args := range []string{`[1]`, `"x"`, `{`} {
		res := f.call(f.toolbox(""), "tickets__search", args, 10*time.Second)
		if !res.IsError || !strings.Contains(res.Content, "JSON object") {
			t.Errorf("arguments %s gave %+v", args, res)
		}
	}
}

// A server that chatters on stderr fills the log with at most
// stderrLines of it per process, scrubbed, and a note that it stopped.
func TestClientStderrIsBounded(t *testing.T) {
	logs := &logtest.Buffer{}
	w := &stderrLog{log: jsonLogger(logs), cred: credentials{secrets: []string{stdioSecret}}}
	for i := range 3 * stderrLines {
		fmt.Fprintf(w, "line %d token=%s\n", i, stdioSecret)
	}
	if n := strings.Count(logs.String(), "\n"); n != stderrLines+1 {
		t.Errorf("%d log lines for %d stderr lines, want %d", n, 3*stderrLines, stderrLines+1)
	}
	if !strings.Contains(logs.String(), "further lines of this process are not logged") {
		t.Error("no note that stderr stopped being logged")
	}
	checkNoSecret(t, "the log", logs.String())
}

// A server that keeps failing is started again after a pause that doubles
// each time, up to MaxBackoff.
func TestClientRestartBackoff(t *testing.T) {
	missing := stdioSpec("missing", "tools")
	missing.Command = "/nonexistent/mcp-server"
	pauses := make(chan time.Duration, 16)
	c := NewClients([]config.MCPServer{missing}, ClientOptions{
		MinBackoff: time.Second, MaxBackoff: 5 * time.Second,
		pause: func(d time.Duration) <-chan time.Time {
			pauses <- d
			ch := make(chan time.Time, 1)
			if len(pauses) < cap(pauses)/2 {
				ch <- time.Time{} // the next attempt at once; later ones wait for Close
			}
			return ch
		},
	})
	c.Start()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	var got []time.Duration
	for range want {
		select {
		case d := <-pauses:
			got = append(got, d)
		case <-time.After(30 * time.Second):
			t.Fatalf("pauses so far: %v", got)
		}
	}
	_ = c.Close()
	if !slices.Equal(got, want) {
		t.Errorf("pauses = %v, want %v", got, want)
	}
}

// A stdio server that stops answering altogether in a call (its process
// stopped: it reads nothing and ignores SIGTERM) costs that call its
// timeout; the ping that follows finds it dead, it is killed and started
// again, and the turn's tools work again.
func TestClientFrozenServerIsRestarted(t *testing.T) {
	f := newClientFixture(t, 30*time.Second, stdioSpec("ice", "freezer"))
	tb := f.toolbox("")
	if res := f.call(tb, "ice__freeze", `{}`, 300*time.Millisecond); !res.IsError || res.Summary != "timed out" {
		t.Errorf("freeze = %+v", res)
	}
	f.waitFor("ice", "restarted", func(h ServerHealth) bool { return h.Restarts >= 1 && h.State == StateReady })
	if res := f.call(tb, "ice__search", `{"query":"thawed"}`, 30*time.Second); res.IsError || res.Content != "found: thawed" {
		t.Errorf("after the restart: %+v", res)
	}
}
