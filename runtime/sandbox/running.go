package sandbox

// Runs reports whether this Manager runs a machine for the session's
// sandbox of grant now. The runtime asks it before serving an exec's owner
// check from its lease in memory: a sandbox it does not run here may have
// been suspended and claimed by another replica since.
func (m *Manager) Runs(sessionID, grant string) bool {
	m.mu.Lock()
	b, ok := m.boxes[boxKey(sessionID, grant)]
	m.mu.Unlock()
	if !ok {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.machine != nil && !b.gone
}
