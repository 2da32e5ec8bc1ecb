// Package helm_test renders the Helm chart in askrepo/ with the helm
// binary and checks what a cluster would be given: the refusals, the
// probes, the security context and where every secret comes from.
package helm_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const chart = "askrepo"

// helm is the helm binary on PATH. Under CI (CI set) a missing helm
// fails: .ci/run installs it, and a chart test skipped unseen proves
// nothing.
func helm(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("helm")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but helm is not on PATH: the chart would go untested; .ci/run installs it (go install helm.sh/helm/v4/cmd/helm@v4.3.2)")
		}
		t.Skip("helm is not on PATH: go install helm.sh/helm/v4/cmd/helm@v4.3.2 to test the chart")
	}
	return path
}

// render runs helm template with args and returns its manifests by kind,
// or helm's error output.
func render(t *testing.T, args ...string) (map[string][]map[string]any, string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helm(t), append([]string{"template", "rel", chart}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, errOut.String(), err
	}
	byKind := map[string][]map[string]any{}
	dec := yaml.NewDecoder(&out)
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template printed YAML that does not parse: %v", err)
		}
		if doc != nil {
			kind, _ := doc["kind"].(string)
			byKind[kind] = append(byKind[kind], doc)
		}
	}
	return byKind, errOut.String(), nil
}

// get walks m by keys (string for a map, int for a list).
func get(m any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, _ := m.(map[string]any)
			m = mm[k]
		case int:
			l, _ := m.([]any)
			if k >= len(l) {
				return nil
			}
			m = l[k]
		}
	}
	return m
}

func one(t *testing.T, byKind map[string][]map[string]any, kind string) map[string]any {
	t.Helper()
	if n := len(byKind[kind]); n != 1 {
		t.Fatalf("%d %s manifests, want 1", n, kind)
	}
	return byKind[kind][0]
}

// container is the bot's container of the Deployment.
func container(t *testing.T, byKind map[string][]map[string]any) map[string]any {
	t.Helper()
	c, _ := get(one(t, byKind, "Deployment"), "spec", "template", "spec", "containers", 0).(map[string]any)
	if c == nil {
		t.Fatal("the Deployment has no container")
	}
	return c
}

// envOf is the container's environment by name: a value, or
// "secret:NAME/KEY" for a secret reference.
func envOf(c map[string]any) map[string]string {
	env := map[string]string{}
	list, _ := c["env"].([]any)
	for _, e := range list {
		name, _ := get(e, "name").(string)
		if ref := get(e, "valueFrom", "secretKeyRef"); ref != nil {
			env[name] = "secret:" + get(ref, "name").(string) + "/" + get(ref, "key").(string)
			continue
		}
		v, _ := get(e, "value").(string)
		env[name] = v
	}
	return env
}

func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no secret", nil, "existingSecret is required"},
		{"replicas without PostgreSQL", []string{"--set", "existingSecret=s", "--set", "replicaCount=3"},
			`replicaCount is 3, but more than one replica needs a shared PostgreSQL store: set store.postgres.existingSecret to a Secret whose key "url" holds the BOT_STORE URL`},
		{"no replica", []string{"--set", "existingSecret=s", "--set", "replicaCount=0"}, "replicaCount must be at least 1"},
		// values.schema.json: a setting of the wrong shape is named.
		{"config not a map", []string{"--set", "existingSecret=s", "--set", "config=repos"}, "at '/config': got string, want object"},
		{"replicas not a number", []string{"--set", "existingSecret=s", "--set", "replicaCount=two"}, "at '/replicaCount': got string, want integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := render(t, tc.args...)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("helm template %v: err %v, stderr %q; want a failure saying %q", tc.args, err, stderr, tc.want)
			}
		})
	}
}

func TestChartSingleReplica(t *testing.T) {
	byKind, stderr, err := render(t, "-f", chart+"/ci/single-values.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	c := container(t, byKind)
	env := envOf(c)
	for name, want := range map[string]string{
		"SLACK_BOT_TOKEN": "secret:askrepo/SLACK_BOT_TOKEN", "SLACK_APP_TOKEN": "secret:askrepo/SLACK_APP_TOKEN",
		"OPENAI_API_KEY": "secret:askrepo/OPENAI_API_KEY", "BOT_STORE": "sqlite", "BOT_DATA_DIR": "/data",
		"BOT_CONFIG": "/etc/askrepo/askrepo.yaml", "BOT_HTTP_ADDR": ":8080",
	} {
		if env[name] != want {
			t.Errorf("env %s = %q, want %q", name, env[name], want)
		}
	}
	checkPod(t, byKind, c)
	dep := one(t, byKind, "Deployment")
	if got := get(dep, "spec", "strategy", "type"); got != "Recreate" {
		t.Errorf("strategy %v, want Recreate: two pods must never share the SQLite volume", got)
	}
	claim := one(t, byKind, "PersistentVolumeClaim")
	if got := volume(t, dep, "data"); get(got, "persistentVolumeClaim", "claimName") != get(claim, "metadata", "name") {
		t.Errorf("the data volume %v is not the chart's PVC", got)
	}
	if cm := one(t, byKind, "ConfigMap"); !strings.Contains(get(cm, "data", "askrepo.yaml").(string), "url: https://github.com/example/api.git") {
		t.Errorf("the ConfigMap does not hold BOT_CONFIG: %v", get(cm, "data"))
	}
	one(t, byKind, "ServiceMonitor")
	one(t, byKind, "PodDisruptionBudget")
	if get(one(t, byKind, "Service"), "spec", "ports", 0, "targetPort") != "http" {
		t.Error("the Service does not reach the http port")
	}
}

func TestChartReplicas(t *testing.T) {
	byKind, stderr, err := render(t, "-f", chart+"/ci/replicas-values.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	c := container(t, byKind)
	if got := envOf(c)["BOT_STORE"]; got != "secret:askrepo-db/url" {
		t.Errorf("BOT_STORE = %q, want the url key of the PostgreSQL Secret", got)
	}
	checkPod(t, byKind, c)
	dep := one(t, byKind, "Deployment")
	if got := get(dep, "spec", "replicas"); got != 3 {
		t.Errorf("replicas %v, want 3", got)
	}
	if len(byKind["PersistentVolumeClaim"]) != 0 || get(volume(t, dep, "data"), "emptyDir") == nil {
		t.Error("replicas share a PVC; each needs a data directory of its own")
	}
	if get(dep, "spec", "strategy", "type") == "Recreate" {
		t.Error("replicas are replaced all at once")
	}
	np := one(t, byKind, "NetworkPolicy")
	if types := get(np, "spec", "policyTypes"); len(types.([]any)) != 2 {
		t.Errorf("NetworkPolicy types %v, want Ingress and Egress", types)
	}
}

// checkPod checks what every rendering must have: the probes on /healthz,
// a non-root, read-only container with its writable places mounted, and
// no secret in the manifests.
func checkPod(t *testing.T, byKind map[string][]map[string]any, c map[string]any) {
	t.Helper()
	for _, probe := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
		if get(c, probe, "httpGet", "path") != "/healthz" || get(c, probe, "httpGet", "port") != "http" {
			t.Errorf("%s = %v, want GET /healthz on the http port", probe, c[probe])
		}
	}
	if get(c, "ports", 0, "containerPort") != 8080 {
		t.Errorf("ports %v, want 8080", c["ports"])
	}
	sc := get(c, "securityContext")
	if get(sc, "readOnlyRootFilesystem") != true || get(sc, "runAsNonRoot") != true || get(sc, "allowPrivilegeEscalation") != false {
		t.Errorf("container securityContext %v, want read-only root, non-root, no privilege escalation", sc)
	}
	if get(sc, "capabilities", "drop", 0) != "ALL" {
		t.Errorf("capabilities %v, want all dropped", get(sc, "capabilities"))
	}
	pod := get(one(t, byKind, "Deployment"), "spec", "template", "spec")
	if get(pod, "securityContext", "runAsNonRoot") != true {
		t.Errorf("pod securityContext %v, want runAsNonRoot", get(pod, "securityContext"))
	}
	mounts := map[string]bool{}
	for _, m := range c["volumeMounts"].([]any) {
		mounts[get(m, "mountPath").(string)] = true
	}
	for _, dir := range []string{"/data", "/tmp", "/home/askrepo"} {
		if !mounts[dir] {
			t.Errorf("%s is not mounted: the root filesystem is read-only and the bot writes there", dir)
		}
	}
	if len(byKind["Secret"]) != 0 {
		t.Error("the chart renders a Secret; tokens must come from existingSecret")
	}
}

func volume(t *testing.T, dep map[string]any, name string) any {
	t.Helper()
	vols, _ := get(dep, "spec", "template", "spec", "volumes").([]any)
	for _, v := range vols {
		if get(v, "name") == name {
			return v
		}
	}
	t.Fatalf("no volume %q", name)
	return nil
}
