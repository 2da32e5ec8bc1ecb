package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio servers of these tests are this test binary run again: with
// serverModeVar set in its environment, TestMain serves MCP over stdin and
// stdout instead of running the tests. The variable reaches the child the
// way an operator's would, through the entry's env mapping, since a stdio
// server gets nothing else of askrepo's environment.
const serverModeVar = "ASKREPO_MCP_TEST_SERVER"

func init() {
	// In init rather than TestMain, so the package's other tests may have
	// a TestMain of their own.
	if mode := os.Getenv(serverModeVar); mode != "" {
		os.Exit(serveTestStdio(mode))
	}
}

// serveTestStdio runs a test server over stdio in the mode given:
//   - tools: the tools of newTestMCPServer;
//   - silent: reads its input and never answers, as a hung server;
//   - exit: writes to stderr (naming its secret) and exits at once;
//   - freezer: tools, and freeze, which stops the process in a call;
//   - spawner: tools, and spawn, which starts a sleeper and gives its pid;
//   - sleeper: sleeps;
//   - flood: answers the handshake with one message that never ends.
func serveTestStdio(mode string) int {
	switch mode {
	case "flood":
		return flood()
	case "silent":
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour) // not select{}, which the runtime ends as a deadlock
	case "sleeper":
		time.Sleep(time.Hour)
		return 0
	case "exit":
		fmt.Fprintf(os.Stderr, "cannot start: bad token %s\n", os.Getenv("TEST_SECRET"))
		return 3
	}
	srv := newTestMCPServer(func() { os.Exit(4) }, nil)
	if mode == "spawner" {
		sdk.AddTool(srv, &sdk.Tool{Name: "spawn", Description: "Starts a process of its own.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), serverModeVar+"=sleeper")
				if err := cmd.Start(); err != nil {
					return nil, nil, err
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.Itoa(cmd.Process.Pid)}}}, nil, nil
			})
	}
	var out io.WriteCloser = os.Stdout
	if mode == "freezer" {
		w := &freezableWriter{w: os.Stdout}
		out = w
		sdk.AddTool(srv, &sdk.Tool{Name: "freeze", Description: "Stops the whole server.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
				// From now on it answers nothing, ignores SIGTERM and
				// outlives its input: only SIGKILL ends it.
				signal.Ignore(syscall.SIGTERM)
				w.frozen.Store(true)
				return nil, nil, nil
			})
	}
	err := srv.Run(context.Background(), &sdk.IOTransport{Reader: os.Stdin, Writer: out})
	if w, ok := out.(*freezableWriter); ok && w.frozen.Load() {
		time.Sleep(time.Hour)
	}
	if err != nil {
		return 1
	}
	return 0
}

// freezableWriter writes to w until frozen, then drops everything.
type freezableWriter struct {
	w      io.WriteCloser
	frozen atomic.Bool
}

func (f *freezableWriter) Write(p []byte) (int, error) {
	if f.frozen.Load() {
		return len(p), nil
	}
	return f.w.Write(p)
}

func (f *freezableWriter) Close() error { return f.w.Close() }

// testHugeResult is the size of the huge tool's text: far over the output
// limit of a result.
const testHugeResult = 1 << 20

type testQueryArgs struct {
	Query string `json:"query" jsonschema:"what to look for"`
}

type testTitleArgs struct {
	Title string `json:"title"`
}

// newTestMCPServer is the MCP server of these tests. crash ends it in the
// middle of a call; hang, when set, is what the hang and crash tools wait
// for (nil: forever).
func newTestMCPServer(crash func(), hang <-chan struct{}) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "v0"}, nil)
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "search", Description: "Search the tickets.", Annotations: ro},
		func(ctx context.Context, req *sdk.CallToolRequest, in testQueryArgs) (*sdk.CallToolResult, any, error) {
			return text("found: " + in.Query), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "create_ticket", Description: "Open a ticket.", Annotations: &sdk.ToolAnnotations{}},
		func(ctx context.Context, req *sdk.CallToolRequest, in testTitleArgs) (*sdk.CallToolResult, any, error) {
			return text("created: " + in.Title), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "delete_ticket", Description: "Delete a ticket."},
		func(ctx context.Context, req *sdk.CallToolRequest, in testTitleArgs) (*sdk.CallToolResult, any, error) {
			return text("deleted"), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami", Description: "Who the server thinks you are.", Annotations: ro},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			if req.Extra != nil && req.Extra.Header != nil {
				return text("you sent Authorization: " + req.Extra.Header.Get("Authorization")), nil, nil
			}
			env := os.Environ()
			sort.Strings(env)
			return text("my environment:\n" + strings.Join(env, "\n")), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail", Description: "Always fails, quoting its credential.", Annotations: ro},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			secret := os.Getenv("TEST_SECRET")
			if req.Extra != nil && req.Extra.Header != nil {
				secret = req.Extra.Header.Get("Authorization")
			}
			return nil, nil, fmt.Errorf("denied for %q", secret)
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "huge", Description: "A very long result.", Annotations: ro},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			var b strings.Builder
			for i := 0; b.Len() < testHugeResult; i++ {
				fmt.Fprintf(&b, "line %d of a very long result\n", i)
			}
			return text(b.String()), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "hang", Description: "Never returns.", Annotations: ro},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			<-hang // nil blocks forever, whatever the call's context says
			return text("too late"), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "crash", Description: "Dies in the middle of the call.", Annotations: ro},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			crash()
			<-hang // an in-process crash does not end this goroutine: the test's end does
			return text("still here"), nil, nil
		})
	return srv
}

// testHTTPServer is a test server over streamable HTTP that requires the
// Authorization header wantAuth.
type testHTTPServer struct {
	*httptest.Server
	release chan struct{} // ends the hang tool's calls
	once    sync.Once
}

func newTestHTTPServer(t *testing.T, wantAuth string) *testHTTPServer {
	t.Helper()
	h := &testHTTPServer{release: make(chan struct{})}
	var srv *sdk.Server
	srv = newTestMCPServer(func() { h.CloseClientConnections() }, h.release)
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != wantAuth {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.stop)
	return h
}

func (h *testHTTPServer) stop() {
	h.once.Do(func() {
		close(h.release)
		h.CloseClientConnections()
		h.Close()
	})
}

// floodBytes is how much the flood server writes as one message: far more
// than a client that bounded nothing would survive holding.
const floodBytes = 256 << 20

// flood reads the handshake's first line and answers with the start of a
// message that goes on for floodBytes, then waits.
func flood() int {
	buf := make([]byte, 4096)
	if _, err := os.Stdin.Read(buf); err != nil {
		return 1
	}
	fmt.Fprint(os.Stdout, `{"jsonrpc":"2.0","id":1,"result":{"junk":"`)
	chunk := []byte(strings.Repeat("a", 1<<20))
	for written := 0; written < floodBytes; written += len(chunk) {
		if _, err := os.Stdout.Write(chunk); err != nil {
			return 0 // the client hung up: it read enough
		}
	}
	time.Sleep(time.Hour)
	return 0
}
