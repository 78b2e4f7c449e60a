package models

import "time"

// Replica is one `subako serve` process on the shared database: registered
// at start, heartbeated, and marked stopped on a graceful stop.
type Replica struct {
	ID          string `gorm:"primaryKey"`
	URL         string // --advertise-url: where peers reach it
	StartedAt   time.Time
	HeartbeatAt time.Time
	StoppedAt   *time.Time
}

// Lease names a job that must run on one replica at a time; Holder has it
// until ExpiresAt.
type Lease struct {
	Name      string `gorm:"primaryKey"`
	Holder    string
	ExpiresAt time.Time
}
