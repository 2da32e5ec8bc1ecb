package repos

import "slices"

// Channels returns the channels repo is configured for, as written (IDs,
// DirectMessages, AnyChannel); none for a repo that does not exist.
func (m *Manager) Channels(repo string) []string {
	for _, s := range m.specs {
		if s.Name == repo {
			return slices.Clone(s.Channels)
		}
	}
	return nil
}
