package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// bot healthcheck asks /healthz where BOT_HTTP_ADDR (or --http-addr) says
// the service listens, and its exit status is the answer.
func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	closed := closedPort(t)
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		status  int
		wantErr string // "" for healthy
	}{
		{"BOT_HTTP_ADDR bound to every interface", []string{"healthcheck"}, map[string]string{"BOT_HTTP_ADDR": ":" + port}, 200, ""},
		{"--http-addr wins", []string{"healthcheck", "--http-addr", "0.0.0.0:" + port}, map[string]string{"BOT_HTTP_ADDR": ":" + closed}, 200, ""},
		{"unhealthy", []string{"healthcheck"}, map[string]string{"BOT_HTTP_ADDR": "127.0.0.1:" + port}, 503, "answered 503 Service Unavailable"},
		{"nothing listening", []string{"healthcheck"}, map[string]string{"BOT_HTTP_ADDR": "[::]:" + closed}, 200, "did not answer"},
		{"listener off", []string{"healthcheck"}, map[string]string{"BOT_HTTP_ADDR": ""}, 200, "BOT_HTTP_ADDR is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status = tc.status
			var out, errOut bytes.Buffer
			err := run(t.Context(), tc.args, envMap(tc.env), strings.NewReader(""), &out, &errOut)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("run: %v", err)
			case tc.wantErr == "" && !strings.Contains(out.String(), "healthy: http://127.0.0.1:"+port+"/healthz"):
				t.Errorf("stdout %q, want the URL asked", out.String())
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("run = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return port
}
