// Package internal_test keeps the architecture true: each dependency on the
// outside world has one home, and the bottom packages stay at the bottom.
package internal_test

import (
	"os/exec"
	"strings"
	"testing"
)

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test=false", "-f", "{{.ImportPath}}:{{join .Imports \",\"}}", "github.com/askrepo/askrepo/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/askrepo/askrepo/"
	imports := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, ":")
		if strings.HasPrefix(pkg, mod) {
			imports[strings.TrimPrefix(pkg, mod)] = strings.Split(deps, ",")
		}
	}
	rules := []struct {
		name    string
		forbids func(pkg, dep string) bool
	}{
		{"only internal/llm imports go-openai", func(pkg, dep string) bool {
			return strings.HasPrefix(dep, "github.com/sashabaranov/go-openai") && pkg != "internal/llm"
		}},
		{"only internal/mcp imports the MCP SDK", func(pkg, dep string) bool {
			return strings.HasPrefix(dep, "github.com/modelcontextprotocol/go-sdk") && pkg != "internal/mcp"
		}},
		{"only internal/tracing and its tracingtest kit import OpenTelemetry", func(pkg, dep string) bool {
			return strings.HasPrefix(dep, "go.opentelemetry.io/") && !strings.HasPrefix(pkg, "internal/tracing")
		}},
		{"internal/tracing imports no other internal package but llm and tools; its tracingtest kit none, and only tests import the kit", func(pkg, dep string) bool {
			return pkg == "internal/tracing" && strings.HasPrefix(dep, mod+"internal/") && dep != mod+"internal/llm" && dep != mod+"internal/tools" ||
				pkg == "internal/tracing/tracingtest" && strings.HasPrefix(dep, mod+"internal/") ||
				dep == mod+"internal/tracing/tracingtest"
		}},
		{"internal/agent, internal/turn and internal/tools do not import internal/mcp: an MCP server's tools reach the loop as any other tools", func(pkg, dep string) bool {
			return (pkg == "internal/agent" || pkg == "internal/turn" || pkg == "internal/tools") && dep == mod+"internal/mcp"
		}},
		{"only internal/slackbot imports slack-go", func(pkg, dep string) bool {
			return strings.HasPrefix(dep, "github.com/slack-go/slack") && !strings.HasPrefix(pkg, "internal/slackbot")
		}},
		{"internal/slackbot and its packages do not import internal/tools: what a tool read comes with the turn's events", func(pkg, dep string) bool {
			return strings.HasPrefix(pkg, "internal/slackbot") && dep == mod+"internal/tools"
		}},
		{"internal/turn imports neither slack-go nor internal/slackbot: a turn knows nothing of where its question came from", func(pkg, dep string) bool {
			return strings.HasPrefix(pkg, "internal/turn") &&
				(strings.HasPrefix(dep, "github.com/slack-go/slack") || strings.HasPrefix(dep, mod+"internal/slackbot") || strings.HasPrefix(dep, mod+"cmd/"))
		}},
		{"internal/mcp, a front end as Slack is, imports neither internal/slackbot nor cmd: a turn goes through internal/turn", func(pkg, dep string) bool {
			return pkg == "internal/mcp" && (strings.HasPrefix(dep, mod+"internal/slackbot") || strings.HasPrefix(dep, mod+"cmd/"))
		}},
		{"internal/gitexec imports no other internal package", func(pkg, dep string) bool {
			return strings.HasPrefix(pkg, "internal/gitexec") && strings.HasPrefix(dep, mod+"internal/") && !strings.HasPrefix(dep, mod+"internal/gitexec")
		}},
		{"internal/tools imports no other internal package but the leaves gitexec, search, symbols and ctxio", func(pkg, dep string) bool {
			return pkg == "internal/tools" && strings.HasPrefix(dep, mod+"internal/") &&
				dep != mod+"internal/gitexec" && dep != mod+"internal/search" && dep != mod+"internal/symbols" && dep != mod+"internal/ctxio"
		}},
		{"internal/symbols imports no other internal package", func(pkg, dep string) bool {
			return pkg == "internal/symbols" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"internal/index imports no other internal package but tools, symbols and gitexec", func(pkg, dep string) bool {
			return pkg == "internal/index" && strings.HasPrefix(dep, mod+"internal/") &&
				dep != mod+"internal/tools" && dep != mod+"internal/symbols" && dep != mod+"internal/gitexec"
		}},
		{"internal/search imports no other internal package", func(pkg, dep string) bool {
			return pkg == "internal/search" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"only tests import the internal/gitexec/gitexectest kit", func(pkg, dep string) bool {
			return dep == mod+"internal/gitexec/gitexectest"
		}},
		{"internal/llm imports no other internal package", func(pkg, dep string) bool {
			return pkg == "internal/llm" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"only tests import the internal/llm/llmtest kit, and it imports no internal package", func(pkg, dep string) bool {
			return dep == mod+"internal/llm/llmtest" || pkg == "internal/llm/llmtest" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"internal/config imports no other internal package", func(pkg, dep string) bool {
			return pkg == "internal/config" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"internal/cite imports no other internal package but gitexec, mdscan and ctxio", func(pkg, dep string) bool {
			return pkg == "internal/cite" && strings.HasPrefix(dep, mod+"internal/") &&
				dep != mod+"internal/gitexec" && dep != mod+"internal/mdscan" && dep != mod+"internal/ctxio"
		}},
		{"internal/usage imports no other internal package but session, llm and config", func(pkg, dep string) bool {
			return pkg == "internal/usage" && strings.HasPrefix(dep, mod+"internal/") &&
				dep != mod+"internal/session" && dep != mod+"internal/llm" && dep != mod+"internal/config"
		}},
		{"internal/ctxio imports no other internal package", func(pkg, dep string) bool {
			return pkg == "internal/ctxio" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"internal/mdscan imports no other internal package", func(pkg, dep string) bool {
			return pkg == "internal/mdscan" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"internal/termsafe imports no other internal package", func(pkg, dep string) bool {
			return pkg == "internal/termsafe" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"internal/budget imports no other internal package but llm", func(pkg, dep string) bool {
			return pkg == "internal/budget" && strings.HasPrefix(dep, mod+"internal/") && dep != mod+"internal/llm"
		}},
		{"internal/slackbot/render imports no other internal package but the leaves mdscan and gitexec (ShortCommit)", func(pkg, dep string) bool {
			return pkg == "internal/slackbot/render" && strings.HasPrefix(dep, mod+"internal/") &&
				dep != mod+"internal/mdscan" && dep != mod+"internal/gitexec"
		}},
		{"internal/session imports no other internal package but llm (the budget is its callers')", func(pkg, dep string) bool {
			return pkg == "internal/session" && strings.HasPrefix(dep, mod+"internal/") && dep != mod+"internal/llm"
		}},
		{"internal/session/sessiontest imports no internal package but session and llm", func(pkg, dep string) bool {
			return pkg == "internal/session/sessiontest" && strings.HasPrefix(dep, mod+"internal/") &&
				dep != mod+"internal/session" && dep != mod+"internal/llm"
		}},
		{"internal/agent imports no other internal package but llm and tools", func(pkg, dep string) bool {
			return pkg == "internal/agent" && strings.HasPrefix(dep, mod+"internal/") &&
				dep != mod+"internal/llm" && dep != mod+"internal/tools"
		}},
		{"internal/repos imports no other internal package but tools, cite, gitexec, config and flock", func(pkg, dep string) bool {
			return pkg == "internal/repos" && strings.HasPrefix(dep, mod+"internal/") &&
				dep != mod+"internal/tools" && dep != mod+"internal/cite" &&
				dep != mod+"internal/gitexec" && dep != mod+"internal/config" && dep != mod+"internal/flock"
		}},
		{"internal/flock imports no other internal package", func(pkg, dep string) bool {
			return pkg == "internal/flock" && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"internal/handoff imports no other internal package but flock", func(pkg, dep string) bool {
			return pkg == "internal/handoff" && strings.HasPrefix(dep, mod+"internal/") && dep != mod+"internal/flock"
		}},
		{"internal/logging and its logtest kit import no other internal package", func(pkg, dep string) bool {
			return strings.HasPrefix(pkg, "internal/logging") && strings.HasPrefix(dep, mod+"internal/")
		}},
		{"the test kits gitexectest and slacktest import no internal package", func(pkg, dep string) bool {
			return (pkg == "internal/gitexec/gitexectest" || pkg == "internal/slackbot/slacktest") &&
				strings.HasPrefix(dep, mod+"internal/")
		}},
		{"only tests import the sessiontest, slacktest and logtest kits (and the benchmarks' fake Slack, slacktest)", func(pkg, dep string) bool {
			return dep == mod+"internal/session/sessiontest" || dep == mod+"internal/slackbot/slacktest" && pkg != "bench/cmd/fakeslack" ||
				dep == mod+"internal/logging/logtest"
		}},
	}
	if len(imports) < 5 {
		t.Fatalf("go list found only %d packages: %v", len(imports), imports)
	}
	for _, r := range rules {
		for pkg, deps := range imports {
			for _, dep := range deps {
				if r.forbids(pkg, dep) {
					t.Errorf("%s: %s imports %s", r.name, pkg, dep)
				}
			}
		}
	}
}
