package helm_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestChartPlacementEnvAndEgress: what an operator sets for where the pod
// runs, what it may use and what it adds to the environment reaches the
// pod as given, and the NetworkPolicy lets out exactly DNS, HTTPS, ssh and
// the extra egress (the database).
func TestChartPlacementEnvAndEgress(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`nodeSelector: {disktype: ssd}
tolerations: [{key: dedicated, operator: Equal, value: askrepo, effect: NoSchedule}]
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]
resources: {limits: {memory: 2Gi}}
extraEnv: [{name: BOT_SLACK_UI, value: messages}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	byKind, stderr, err := render(t, "-f", chart+"/ci/replicas-values.yaml", "-f", values)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	pod := get(one(t, byKind, "Deployment"), "spec", "template", "spec")
	if get(pod, "nodeSelector", "disktype") != "ssd" || get(pod, "tolerations", 0, "key") != "dedicated" ||
		get(pod, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", 0, "matchExpressions", 0, "key") != "zone" {
		t.Errorf("placement not passed on: nodeSelector %v, tolerations %v, affinity %v", get(pod, "nodeSelector"), get(pod, "tolerations"), get(pod, "affinity"))
	}
	c := container(t, byKind)
	if get(c, "resources", "limits", "memory") != "2Gi" {
		t.Errorf("resources %v, want the limit given", get(c, "resources"))
	}
	if got := envOf(c)["BOT_SLACK_UI"]; got != "messages" {
		t.Errorf("extraEnv: BOT_SLACK_UI %q, want messages", got)
	}

	var ports []any
	for _, rule := range get(one(t, byKind, "NetworkPolicy"), "spec", "egress").([]any) {
		for i := range len(get(rule, "ports").([]any)) {
			ports = append(ports, get(rule, "ports", i, "port"))
		}
	}
	slices.SortFunc(ports, func(a, b any) int { return a.(int) - b.(int) })
	if want := []any{22, 53, 53, 443, 5432}; !slices.Equal(ports, want) {
		t.Errorf("egress ports %v, want %v: DNS (UDP and TCP), ssh, HTTPS and the database", ports, want)
	}

	// Off by default: no NetworkPolicy and no ServiceMonitor unless asked.
	byKind, stderr, err = render(t, "--set", "existingSecret=s")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	if len(byKind["NetworkPolicy"]) != 0 || len(byKind["ServiceMonitor"]) != 0 {
		t.Errorf("defaults render %d NetworkPolicy and %d ServiceMonitor, want none", len(byKind["NetworkPolicy"]), len(byKind["ServiceMonitor"]))
	}
}
