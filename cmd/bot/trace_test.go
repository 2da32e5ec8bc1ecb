package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/tracing/tracingtest"
)

// bot ask with an OTLP endpoint exports the turn's trace before it exits,
// and prints its trace id under the answer; without one it prints none.
func TestAskExportsTrace(t *testing.T) {
	rec := tracingtest.New(t)
	repo := testRepo(t)
	readCall := `{"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"README.md\"}"}}]}`
	fake := newModel(t, nil, readCall, jsonContent("It is a demo."))
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_MODEL": "gpt-test",
		"OPENAI_STREAM": "false", "REPO_PATH": repo, "OTEL_EXPORTER_OTLP_ENDPOINT": rec.Endpoint()}
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "what is this?"}, envMap(env), strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	spans := rec.Spans()
	var turn tracingtest.Span
	names := map[string]bool{}
	for _, s := range spans {
		names[s.Name] = true
		if s.Name == "invoke_agent" {
			turn = s
		}
	}
	for _, want := range []string{"invoke_agent", "chat gpt-test", "execute_tool read_file"} {
		if !names[want] {
			t.Errorf("no %q span among %v", want, names)
		}
	}
	if !strings.Contains(out.String(), "trace "+turn.TraceID) || turn.TraceID == "" {
		t.Errorf("the footer lacks the trace id %q:\n%s", turn.TraceID, out.String())
	}
	if got := turn.Resource["service.name"]; got != "askrepo" {
		t.Errorf("service.name %q, want askrepo", got)
	}

	delete(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
	out.Reset()
	fake2 := newModel(t, nil, jsonContent("It is a demo."))
	env["OPENAI_BASE_URL"] = fake2.URL
	if err := run(t.Context(), []string{"ask", "what is this?"}, envMap(env), strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	if strings.Contains(out.String(), "trace ") {
		t.Errorf("untraced, the footer names a trace:\n%s", out.String())
	}
}

// bot chat traces each question as a turn of one conversation, and a new
// conversation (/reset) gets a conversation id of its own.
func TestChatTracesEachTurn(t *testing.T) {
	rec := tracingtest.New(t)
	fake := newModel(t, nil, `{"content":"one"}`, `{"content":"two"}`, `{"content":"three"}`)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_STREAM": "false",
		"REPO_PATH": testRepo(t), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rec.Endpoint() + "/v1/traces"})
	var out, errOut bytes.Buffer
	stdin := strings.NewReader("first?\nsecond?\n/reset\nthird?\n/exit\n")
	if err := run(t.Context(), []string{"chat"}, env, stdin, &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	var convs []string
	traces := map[string]bool{}
	for _, s := range rec.Spans() {
		if s.Name == "invoke_agent" {
			convs = append(convs, s.Attrs["gen_ai.conversation.id"])
			traces[s.TraceID] = true
		}
	}
	if len(convs) != 3 || len(traces) != 3 || convs[0] != convs[1] || convs[1] == convs[2] {
		t.Errorf("turn spans of conversations %q in %d traces; want 3 turns, one trace each, the first two of one conversation", convs, len(traces))
	}
}

// The traces-only URL and BOT_TRACE_CONTENT reach the exporter from the
// environment: spans go to that URL, with the question on them only when
// content is asked for.
func TestAskTraceSettings(t *testing.T) {
	const question = "what is QUESTION-5d1?"
	for _, content := range []string{"false", "true"} {
		rec := tracingtest.New(t)
		fake := newModel(t, nil, jsonContent("It is a demo."))
		env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_STREAM": "false",
			"REPO_PATH": testRepo(t), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rec.Endpoint() + "/v1/traces", "BOT_TRACE_CONTENT": content}
		var out, errOut bytes.Buffer
		if err := run(t.Context(), []string{"ask", question}, envMap(env), strings.NewReader(""), &out, &errOut); err != nil {
			t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
		}
		spans := rec.Spans()
		if len(spans) == 0 {
			t.Fatalf("BOT_TRACE_CONTENT=%q: no spans at the traces URL", content)
		}
		held := false
		for _, s := range spans {
			for _, v := range s.Attrs {
				held = held || strings.Contains(v, "QUESTION-5d1")
			}
		}
		if held != (content == "true") {
			t.Errorf("BOT_TRACE_CONTENT=%q: the question is on the spans: %v", content, held)
		}
	}
}
