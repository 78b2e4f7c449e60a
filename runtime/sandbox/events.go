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

// notify reports a record after a state change (started, suspended,
// retired, failed) to Config.OnChange, in the goroutine that made it.
func (m *Manager) notify(rec Record) {
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(rec)
	}
}

func (m *Manager) usage(rec Record, kind string, quantity float64, at time.Time) {
	if m.cfg.OnUsage != nil {
		m.cfg.OnUsage(UsageEvent{SandboxID: rec.ID, SessionID: rec.SessionID, Kind: kind, Quantity: quantity, At: at})
	}
}
