package tools

import "testing"

// BenchmarkSecretsNewProcess measures what the set of secret blobs costs
// a new process on the Go source tree, once its repository is open:
// walking the history (nothing saved) against reading the saved index
// and asking git for the tips alone (saved).
//
//	go test -run '^$' -bench SecretsNewProcess -benchtime 20x ./internal/tools/
func BenchmarkSecretsNewProcess(b *testing.B) {
	dir := benchGoTree(b)
	for _, tc := range []struct {
		name string
		opts WorkspaceOptions
	}{
		{"nothing saved", WorkspaceOptions{}},
		{"saved", WorkspaceOptions{SecretsDir: b.TempDir()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			open := func() (*Workspace, *gitCLI) {
				forgetSecretIndexes()
				ws, err := NewWorkspace(dir, tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, ok := ws.gitLayout(b.Context()); !ok {
					b.Fatal("no git layout")
				}
				return ws, newGitCLI(ws, GitOptions{})
			}
			ws, g := open()
			if _, err := g.secrets(b.Context()); err != nil { // saves the index
				b.Fatal(err)
			}
			ws.Close()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				ws, g := open()
				b.StartTimer()
				set, err := g.secrets(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(len(set.ids)), "secret-blobs")
				ws.Close()
				b.StartTimer()
			}
		})
	}
}
