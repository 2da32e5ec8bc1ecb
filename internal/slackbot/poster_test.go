package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/askrepo/askrepo/internal/slackbot/render"
	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"
)

// fakeWebAPI speaks the part of Slack's Web API the poster uses:
// form-encoded chat.postMessage and chat.update with the token in the body,
// JSON replies, and scripted failures (429 with Retry-After, 5xx, ok:false).
type fakeWebAPI struct {
	srv *httptest.Server

	mu      sync.Mutex
	calls   []apiCall                // every request, in arrival order
	script  map[string][]string      // per method, replies to use before "ok"
	hold    map[string]chan struct{} // per method, block the next request until closed
	arrived chan string              // method of each request, as it arrives
	posted  []url.Values             // messages Slack accepted (postMessage ok)
	nextTS  int
}

type apiCall struct {
	method string
	form   url.Values
	reply  string
}

func newFakeWebAPI(t testing.TB) *fakeWebAPI {
	t.Helper()
	f := &fakeWebAPI{script: map[string][]string{}, hold: map[string]chan struct{}{}, arrived: make(chan string, 100)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat.postMessage", f.handle("chat.postMessage"))
	mux.HandleFunc("POST /api/chat.update", f.handle("chat.update"))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWebAPI) client() *slack.Client {
	return slack.New("xoxb-test", slack.OptionAPIURL(f.srv.URL+"/api/"))
}

// replies queues replies for method: "ok", "429:<seconds>", "429" (no
// Retry-After), "500", "drop" (close the connection without an answer), or
// an ok:false error code such as "ratelimited".
func (f *fakeWebAPI) replies(method string, rs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[method] = append(f.script[method], rs...)
}

func (f *fakeWebAPI) handle(method string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		hold := f.hold[method]
		delete(f.hold, method)
		f.mu.Unlock()
		f.arrived <- method
		if hold != nil {
			<-hold
		}

		f.mu.Lock()
		reply := "ok"
		if q := f.script[method]; len(q) > 0 {
			reply, f.script[method] = q[0], q[1:]
		}
		if r.PostForm.Get("token") != "xoxb-test" {
			reply = "invalid_auth"
		}
		f.calls = append(f.calls, apiCall{method: method, form: r.PostForm, reply: reply})
		ts := r.PostForm.Get("ts")
		if reply == "ok" && method == "chat.postMessage" {
			f.nextTS++
			ts = fmt.Sprintf("1700000000.%06d", f.nextTS)
			f.posted = append(f.posted, r.PostForm)
		}
		f.mu.Unlock()

		w.Header().Set("Content-Type", "application/json")
		switch {
		case reply == "ok":
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": r.PostForm.Get("channel"), "ts": ts})
		case strings.HasPrefix(reply, "429"):
			if after, ok := strings.CutPrefix(reply, "429:"); ok {
				w.Header().Set("Retry-After", after)
			}
			w.WriteHeader(http.StatusTooManyRequests)
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "ratelimited"})
		case reply == "drop": // the connection dies before an answer
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case reply == "500":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "<html>internal error</html>")
		default:
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": reply})
		}
	}
}

func (f *fakeWebAPI) recorded() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

func (f *fakeWebAPI) replyLog() []string {
	var out []string
	for _, c := range f.recorded() {
		out = append(out, c.method+" "+c.reply)
	}
	return out
}

// hooks counts what the poster reports for metrics.
type hooks struct {
	mu     sync.Mutex
	errors []string
	limits []string
}

func (h *hooks) options() PosterOptions {
	return PosterOptions{
		OnError:      func(m string, err error) { h.mu.Lock(); h.errors = append(h.errors, m); h.mu.Unlock() },
		On429:        func(m string) { h.mu.Lock(); h.limits = append(h.limits, m); h.mu.Unlock() },
		PostInterval: time.Millisecond, UpdateInterval: time.Millisecond, Burst: 100,
	}
}

func testPoster(t testing.TB, f *fakeWebAPI, h *hooks) *Poster {
	p := NewPoster(f.client(), h.options())
	p.noRetryAfter = 0 // rate limits without Retry-After: retry at once in tests
	return p
}

func TestPosterPost(t *testing.T) {
	cases := []struct {
		name       string
		replies    []string
		wantErr    bool
		wantLog    []string
		wantPosted int
		wantErrors []string
		wantLimits []string
	}{
		{"ok", nil, false,
			[]string{"chat.postMessage ok"}, 1, nil, nil},
		{"429 with Retry-After then ok", []string{"429:0"}, false,
			[]string{"chat.postMessage 429:0", "chat.postMessage ok"}, 1, nil, []string{"chat.postMessage"}},
		{"429 without Retry-After then ok", []string{"429"}, false,
			[]string{"chat.postMessage 429", "chat.postMessage ok"}, 1, nil, []string{"chat.postMessage"}},
		{"ok:false ratelimited twice then ok", []string{"ratelimited", "ratelimited"}, false,
			[]string{"chat.postMessage ratelimited", "chat.postMessage ratelimited", "chat.postMessage ok"}, 1, nil, []string{"chat.postMessage", "chat.postMessage"}},
		{"500 is not retried: Slack may have posted", []string{"500"}, true,
			[]string{"chat.postMessage 500"}, 0, []string{"chat.postMessage"}, nil},
		{"network failure is not retried either", []string{"drop"}, true,
			[]string{"chat.postMessage drop"}, 0, []string{"chat.postMessage"}, nil},
		{"Slack error is final", []string{"channel_not_found"}, true,
			[]string{"chat.postMessage channel_not_found"}, 0, []string{"chat.postMessage"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeWebAPI(t)
			f.replies("chat.postMessage", c.replies...)
			h := &hooks{}
			p := testPoster(t, f, h)

			ts, err := p.Post(t.Context(), "C1", "1699999999.000100", render.Outgoing{Text: "hi"})
			if (err != nil) != c.wantErr {
				t.Fatalf("Post() error = %v, want error: %v", err, c.wantErr)
			}
			if !c.wantErr && ts != "1700000000.000001" {
				t.Errorf("Post() ts = %q, want the ts Slack returned", ts)
			}
			if diff := cmp.Diff(c.wantLog, f.replyLog()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if len(f.posted) != c.wantPosted {
				t.Errorf("Slack holds %d messages, want %d", len(f.posted), c.wantPosted)
			}
			if diff := cmp.Diff(c.wantErrors, h.errors); diff != "" {
				t.Errorf("OnError calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantLimits, h.limits); diff != "" {
				t.Errorf("On429 calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPosterPostErrorsCarrySlackError(t *testing.T) {
	f := newFakeWebAPI(t)
	f.replies("chat.postMessage", "msg_too_long")
	_, err := testPoster(t, f, &hooks{}).Post(t.Context(), "C1", "", render.Outgoing{Text: "x"})
	se, ok := errors.AsType[slack.SlackErrorResponse](err)
	if !ok || se.Err != "msg_too_long" {
		t.Fatalf("Post() error = %v, want a slack.SlackErrorResponse with msg_too_long", err)
	}
	if !strings.Contains(err.Error(), "chat.postMessage to C1") {
		t.Errorf("error %q should name the method and channel", err)
	}
}

// TestPosterPostWireFormat checks what reaches Slack: the token in the form
// body, the thread, the fallback text, unfurling off, and the blocks as JSON
// that decodes back to the same blocks.
func TestPosterPostWireFormat(t *testing.T) {
	msgs := []render.Outgoing{
		render.ProgressMessages([]render.CallLine{{Name: "read_file", Brief: `a & b.go`, State: render.CallOK, Summary: "3 lines"}},
			render.ProgressOptions{StopActionID: "askrepo_stop", StopValue: "turn-1", Status: "Working…"})[0],
		render.AnswerMessages("# Title\n\n**bold** <!here>\n\n| a | b |\n|---|---|\n| 1 | 2 |", render.Footer{Steps: 1, PromptTokens: 10, CompletionTokens: 2})[0],
		render.ErrorMessage("It broke.", "r1"),
	}
	for i, m := range msgs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			f := newFakeWebAPI(t)
			p := testPoster(t, f, &hooks{})
			if _, err := p.Post(t.Context(), "C9", "1699999999.000100", m); err != nil {
				t.Fatal(err)
			}
			form := f.recorded()[0].form
			for k, want := range map[string]string{
				"token": "xoxb-test", "channel": "C9", "thread_ts": "1699999999.000100",
				"text": m.Text, "unfurl_links": "false", "unfurl_media": "false",
			} {
				if got := form.Get(k); got != want {
					t.Errorf("form %s = %q, want %q", k, got, want)
				}
			}
			var decoded slack.Blocks
			if err := json.Unmarshal([]byte(form.Get("blocks")), &decoded); err != nil {
				t.Fatalf("blocks do not decode as Slack blocks: %v\n%s", err, form.Get("blocks"))
			}
			again, err := json.Marshal(decoded.BlockSet)
			if err != nil {
				t.Fatal(err)
			}
			sent, _ := json.Marshal(m.Blocks)
			if string(again) != string(sent) || form.Get("blocks") != string(sent) {
				t.Errorf("blocks changed on the way:\nsent    %s\nwire    %s\ndecoded %s", sent, form.Get("blocks"), again)
			}
		})
	}
}

func TestPosterPostWithoutThread(t *testing.T) {
	f := newFakeWebAPI(t)
	if _, err := testPoster(t, f, &hooks{}).Post(t.Context(), "C1", "", render.Outgoing{Text: "top level"}); err != nil {
		t.Fatal(err)
	}
	form := f.recorded()[0].form
	if form.Has("thread_ts") || form.Has("blocks") {
		t.Errorf("form = %v, want neither thread_ts nor blocks", form)
	}
}

// TestPosterWaitsRetryAfter checks the wait after a 429 honours the context:
// with Retry-After of one second and a context that ends first, Post gives up
// without sending again.
func TestPosterWaitsRetryAfter(t *testing.T) {
	f := newFakeWebAPI(t)
	f.replies("chat.postMessage", "429:1")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := testPoster(t, f, &hooks{}).Post(ctx, "C1", "", render.Outgoing{Text: "x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Post() error = %v, want the context's deadline", err)
	}
	if got := f.replyLog(); len(got) != 1 {
		t.Errorf("requests = %v, want only the rate-limited one", got)
	}
}

func TestPosterUpdate(t *testing.T) {
	cases := []struct {
		name       string
		replies    []string
		wantErr    bool
		wantLog    []string
		wantErrors []string
	}{
		{"ok", nil, false, []string{"chat.update ok"}, nil},
		{"429 then ok", []string{"429:0"}, false, []string{"chat.update 429:0", "chat.update ok"}, nil},
		{"500 retried once", []string{"500"}, false, []string{"chat.update 500", "chat.update ok"}, nil},
		{"500 twice fails", []string{"500", "500"}, true, []string{"chat.update 500", "chat.update 500"}, []string{"chat.update"}},
		{"network failure retried once", []string{"drop"}, false, []string{"chat.update drop", "chat.update ok"}, nil},
		{"429 does not use up the one retry", []string{"500", "429:0", "ok"}, false, []string{"chat.update 500", "chat.update 429:0", "chat.update ok"}, nil},
		{"Slack error is final", []string{"message_not_found"}, true, []string{"chat.update message_not_found"}, []string{"chat.update"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeWebAPI(t)
			f.replies("chat.update", c.replies...)
			h := &hooks{}
			m := render.ProgressMessages([]render.CallLine{{Name: "read_file", Brief: `a`, State: render.CallOK}}, render.ProgressOptions{})[0]
			err := testPoster(t, f, h).Update(t.Context(), "C1", "1700000000.000001", m)
			if (err != nil) != c.wantErr {
				t.Fatalf("Update() error = %v, want error: %v", err, c.wantErr)
			}
			if diff := cmp.Diff(c.wantLog, f.replyLog()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantErrors, h.errors); diff != "" {
				t.Errorf("OnError calls (-want +got):\n%s", diff)
			}
			for _, call := range f.recorded() {
				sent, _ := json.Marshal(m.Blocks)
				if call.form.Get("ts") != "1700000000.000001" || call.form.Get("blocks") != string(sent) || call.form.Get("text") != m.Text {
					t.Errorf("update form = %v, want ts, text and blocks of the message", call.form)
				}
			}
		})
	}
}

func TestPosterUpdateClearsBlocks(t *testing.T) {
	f := newFakeWebAPI(t)
	if err := testPoster(t, f, &hooks{}).Update(t.Context(), "C1", "1.2", render.Outgoing{Text: "plain now"}); err != nil {
		t.Fatal(err)
	}
	if got := f.recorded()[0].form.Get("blocks"); got != "[]" {
		t.Errorf("blocks = %q, want [] so the old blocks go away", got)
	}
}

// TestPosterUpdateCoalesces holds Slack on the first update of a message
// while three more are queued: once it answers, only the newest of the three
// is sent, every caller gets nil, and the order on the wire is v1, v4.
func TestPosterUpdateCoalesces(t *testing.T) {
	f := newFakeWebAPI(t)
	release := make(chan struct{})
	f.hold["chat.update"] = release
	p := testPoster(t, f, &hooks{})

	errs := make(chan error, 4)
	update := func(v int) {
		errs <- p.Update(t.Context(), "C1", "1.2", render.Outgoing{Text: fmt.Sprintf("v%d", v)})
	}
	go update(1)
	if m := <-f.arrived; m != "chat.update" {
		t.Fatalf("first request was %s", m)
	}
	for v := 2; v <= 4; v++ {
		go update(v)
		// Wait until the call is queued, so the versions arrive in order.
		for {
			p.mu.Lock()
			refs := p.msgs[msgKey{"C1", "1.2"}].refs
			p.mu.Unlock()
			if refs == v {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	close(release)
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("Update() = %v, want nil for sent and superseded updates", err)
		}
	}
	var texts []string
	for _, c := range f.recorded() {
		texts = append(texts, c.form.Get("text"))
	}
	if diff := cmp.Diff([]string{"v1", "v4"}, texts); diff != "" {
		t.Errorf("updates sent (-want +got):\n%s", diff)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.msgs) != 0 {
		t.Errorf("%d message states left after all updates returned", len(p.msgs))
	}
}

// TestPosterPacesPerChannel: with a burst of 2 and a long interval, a third
// post to one channel waits (here until its context ends), while another
// channel is not held up.
func TestPosterPacesPerChannel(t *testing.T) {
	f := newFakeWebAPI(t)
	p := NewPoster(f.client(), PosterOptions{PostInterval: time.Hour, Burst: 2})
	for range 2 {
		if _, err := p.Post(t.Context(), "C1", "", render.Outgoing{Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if _, err := p.Post(ctx, "C1", "", render.Outgoing{Text: "x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third post = %v, want it held back until the context ended", err)
	}
	if _, err := p.Post(t.Context(), "C2", "", render.Outgoing{Text: "x"}); err != nil {
		t.Fatalf("post to another channel: %v", err)
	}
	if got := len(f.recorded()); got != 3 {
		t.Errorf("Slack saw %d posts, want 3", got)
	}
}

func TestBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bucket{every: time.Second, burst: 3, tokens: 3, last: time.Now()}
		start := time.Now()
		var at []time.Duration
		take := func() {
			if err := b.wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Since(start))
		}
		for range 5 {
			take()
		}
		b.pause(10 * time.Second) // Slack said Retry-After: 10 at t=2s
		take()
		time.Sleep(time.Hour)
		take()
		take()
		want := []time.Duration{0, 0, 0, time.Second, 2 * time.Second, 12 * time.Second, time.Hour + 12*time.Second, time.Hour + 12*time.Second}
		if diff := cmp.Diff(want, at); diff != "" {
			t.Errorf("tokens taken at (-want +got):\n%s", diff)
		}
	})
}

func TestBucketCancelReturnsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &bucket{every: time.Second, burst: 1, tokens: 0, last: time.Now()}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if err := b.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait() = %v, want deadline", err)
		}
		start := time.Now()
		if err := b.wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got < 899*time.Millisecond || got > 901*time.Millisecond {
			t.Errorf("next token after a cancelled wait came in %v, want 900ms (the cancelled caller's token returned)", got)
		}
	})
}
