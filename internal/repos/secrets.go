package repos

import "path/filepath"

// secretsDir is where the Workspaces of every repository keep their
// secret blobs between runs (tools.WorkspaceOptions.SecretsDir), so a
// restart or a CLI call reads them instead of walking each history again:
// DataDir/secrets, or nowhere without a DataDir.
func (o Options) secretsDir() string {
	if o.DataDir == "" {
		return ""
	}
	return filepath.Join(o.DataDir, "secrets")
}
