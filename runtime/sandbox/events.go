package sandbox

import "time"

// Usage kinds reported at each suspension.
const (
	UsageMachineSeconds = "machine_seconds"
	UsageArchiveBytes   = "archive_bytes"
)

// UsageEvent is one billable quantity: the seconds a machine ran (start to
// suspension, idle minutes included), or the size of the archive kept.
type UsageEvent struct {
	SandboxID string
	SessionID string
	Kind      string
	Quantity  float64
	At        time.Time
}

// Subscribe returns a channel that receives every record after a state
// change (started, suspended, retired, failed), for live pages. A subscriber
// that falls more than buffer changes behind misses some; it can reload
// from the Store. Call the returned function to unsubscribe.
func (m *Manager) Subscribe(buffer int) (<-chan Record, func()) {
	ch := make(chan Record, max(buffer, 1))
	m.subsMu.Lock()
	m.nextSub++
	id := m.nextSub
	m.subs[id] = ch
	m.subsMu.Unlock()
	return ch, func() {
		m.subsMu.Lock()
		if _, ok := m.subs[id]; ok {
			delete(m.subs, id)
			close(ch)
		}
		m.subsMu.Unlock()
	}
}

func (m *Manager) notify(rec Record) {
	m.subsMu.Lock()
	defer m.subsMu.Unlock()
	for _, ch := range m.subs {
		select {
		case ch <- rec:
		default:
		}
	}
}

func (m *Manager) usage(rec Record, kind string, quantity float64, at time.Time) {
	if m.cfg.OnUsage != nil {
		m.cfg.OnUsage(UsageEvent{SandboxID: rec.ID, SessionID: rec.SessionID, Kind: kind, Quantity: quantity, At: at})
	}
}
