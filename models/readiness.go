package models

import "time"

// ReadinessProbe is one replica's last write of /readyz's probe.
type ReadinessProbe struct {
	Replica   string `gorm:"primaryKey"`
	WrittenAt time.Time
}
