package sandbox

import "time"

// limitsFor is the Config's limits with the key's (a grant's resources)
// in place of each one the key sets.
func (m *Manager) limitsFor(key Key) Limits {
	l := m.cfg.Limits
	if key.Limits.MemoryBytes > 0 {
		l.MemoryBytes = key.Limits.MemoryBytes
	}
	if key.Limits.Pids > 0 {
		l.Pids = key.Limits.Pids
	}
	if key.Limits.CPUPercent > 0 {
		l.CPUPercent = key.Limits.CPUPercent
	}
	if key.Limits.DiskBytes > 0 {
		l.DiskBytes = key.Limits.DiskBytes
	}
	return l
}

// idleTimeout is how long b may stay idle before Tick suspends it (b.mu held).
func (m *Manager) idleTimeout(b *box) time.Duration {
	if b.idle > 0 {
		return b.idle
	}
	return m.cfg.IdleTimeout
}
