package models

import "time"

// VersionToolPins is the tool list of one MCP server URL of a version: on a
// draft, what "Fetch tools" last saw there; on a published version, the
// pinned definitions its sessions offer. Tools is a JSON array of
// definitions, each with its hash.
type VersionToolPins struct {
	VersionID string `gorm:"primaryKey"`
	URL       string `gorm:"primaryKey;column:url"`
	Tools     string
	FetchedAt time.Time
}

// TableName is the migration's name for the table.
func (VersionToolPins) TableName() string { return "version_tool_pins" }
