package models

import "time"

// VolumeFile is one file of a session's volume: where it is, how big, its
// digest, and who wrote it last. The bytes are in the volume store.
type VolumeFile struct {
	SessionID  string `gorm:"primaryKey"`
	Path       string `gorm:"primaryKey"`
	Size       int64
	SHA256     string `gorm:"column:sha256"`
	ModifiedAt time.Time
	ModifiedBy string
}

// ToolCallVolume is what one function call read from and wrote to its
// session's volume, as a JSON list.
type ToolCallVolume struct {
	ToolCallID string `gorm:"primaryKey"`
	SessionID  string
	Access     string
}

// TableName keeps gorm from pluralising the name.
func (ToolCallVolume) TableName() string { return "tool_call_volume" }
