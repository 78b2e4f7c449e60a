package models

import "time"

// Permissions as data (migration 0025, seed 004).

// Tenant is a customer of the operator, holding its sessions and vaults.
type Tenant struct {
	ID        string `gorm:"primaryKey"`
	Name      string
	CreatedBy string
	CreatedAt time.Time
}

// Role is a named set of permissions; people fill it through seats.
type Role struct {
	ID          string `gorm:"primaryKey"`
	TenantID    string
	Name        string
	Description string
	// DecayDays removes a seat's permission unused this long (0: the server default).
	DecayDays int
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Holder kinds of a Permission row.
const (
	HolderRole  = "role"
	HolderUser  = "user"
	HolderToken = "token"
)

// Permission is one verb in a scope with an optional limit, held by a role,
// a person directly, or a narrowed token.
type Permission struct {
	ID         string `gorm:"primaryKey"`
	HolderKind string
	HolderID   string
	Verb       string // Noun.verb or Noun.*
	Scope      string // *, tenant:<id>, agent:<id>, vault:<id>, session:<id>
	// Limits (zero values: none).
	LimitCount   int
	LimitPeriod  string // hour, day, week, month
	LimitField   string
	LimitValues  string // JSON list of allowed values of LimitField
	LimitSpendSC float64
	CreatedBy    string
	CreatedAt    time.Time
	LastUsedAt   *time.Time
}

// Seat is a person filling a role.
type Seat struct {
	ID        string `gorm:"primaryKey"`
	UserID    string
	RoleID    string
	CreatedBy string
	CreatedAt time.Time
}

// SeatPermission is one of a seat's role permissions: its last use, and its
// removal by decay or a person (RemovedBy names the Change).
type SeatPermission struct {
	SeatID       string `gorm:"primaryKey"`
	PermissionID string `gorm:"primaryKey"`
	LastUsedAt   *time.Time
	RemovedAt    *time.Time
	RemovedBy    string
}

// LimitUsage counts one holder's use of a limited permission in one period.
type LimitUsage struct {
	PermissionID string    `gorm:"primaryKey"`
	HolderID     string    `gorm:"primaryKey"`
	PeriodStart  time.Time `gorm:"primaryKey"`
	Used         int
	SpentSC      float64 `gorm:"column:spent_sc"`
}

// TableName keeps gorm from pluralising the usage table's name.
func (LimitUsage) TableName() string { return "limit_usage" }

// Change is one change to who may do what, with before and after.
type Change struct {
	ID         string `gorm:"primaryKey"`
	Kind       string
	Subject    string
	Summary    string
	ByKind     string
	ByID       string
	ByLabel    string
	BeforeJSON string `gorm:"column:before_json"`
	AfterJSON  string `gorm:"column:after_json"`
	ActionID   string
	CreatedAt  time.Time
	UndoneAt   *time.Time
	UndoneBy   string
	UndoOf     string
}
