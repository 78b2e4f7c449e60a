package models

import "time"

// Permissions as data (migration 0025, seed 004).

// Tenant is a customer of the operator, holding its sessions and vaults.
type Tenant struct {
	ID        string    `gorm:"primaryKey" json:"id"`
	Name      string    `json:"name"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

// Role is a named set of permissions; people fill it through seats.
type Role struct {
	ID          string `gorm:"primaryKey" json:"id"`
	TenantID    string `json:"tenant_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// DecayDays removes a seat's permission unused this long (0: the server default).
	DecayDays int       `json:"decay_days"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
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
	ID         string `gorm:"primaryKey" json:"id"`
	HolderKind string `json:"holder_kind"`
	HolderID   string `json:"holder_id"`
	Verb       string `json:"verb"`  // Noun.verb or Noun.*
	Scope      string `json:"scope"` // *, tenant:<id>, agent:<id>, vault:<id>, session:<id>
	// Limits (zero values: none).
	LimitCount   int        `json:"limit_count"`
	LimitPeriod  string     `json:"limit_period"` // hour, day, week, month
	LimitField   string     `json:"limit_field"`
	LimitValues  string     `json:"limit_values"` // JSON list of allowed values of LimitField
	LimitSpendSC float64    `json:"limit_spend_sc"`
	CreatedBy    string     `json:"created_by"`
	CreatedAt    time.Time  `json:"created_at"`
	LastUsedAt   *time.Time `json:"last_used_at"`
}

// Seat is a person filling a role.
type Seat struct {
	ID        string    `gorm:"primaryKey" json:"id"`
	UserID    string    `json:"user_id"`
	RoleID    string    `json:"role_id"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

// SeatPermission is one of a seat's role permissions: its last use, and its
// removal by decay or a person (RemovedBy names the Change).
type SeatPermission struct {
	SeatID       string     `gorm:"primaryKey" json:"seat_id"`
	PermissionID string     `gorm:"primaryKey" json:"permission_id"`
	LastUsedAt   *time.Time `json:"last_used_at"`
	RemovedAt    *time.Time `json:"removed_at"`
	RemovedBy    string     `json:"removed_by"`
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
