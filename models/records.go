package models

import "time"

// User is a person with access to the console and API.
type User struct {
	ID           string `gorm:"primaryKey"`
	Email        string
	Name         string
	Access       string
	PasswordHash string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Invite is a one-time link: the owner's setup link or an invitation. Only the
// hash of its token is stored, so a database dump cannot be turned into a login.
type Invite struct {
	ID        string `gorm:"primaryKey"`
	TokenHash string
	Kind      string // "setup" or "invite"
	Email     string
	Access    string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// WebSession is a signed-in browser. The cookie holds only its id; deleting the
// row (logout, removal of the person) ends it at the next request.
type WebSession struct {
	ID        string `gorm:"primaryKey"`
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Token is a person's API token; only its hash is kept.
type Token struct {
	ID         string `gorm:"primaryKey"`
	UserID     string
	Name       string
	Prefix     string
	TokenHash  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Action is the record of one verb: who asked, what for, and the verdict.
type Action struct {
	ID        string `gorm:"primaryKey"`
	Verb      string
	ByKind    string
	ByID      string
	ByLabel   string
	Targets   string
	Verdict   string
	Reason    string
	Model     string
	Version   string
	CreatedAt time.Time
}

// Agent is a named agent; what it may call lives in its versions.
type Agent struct {
	ID          string `gorm:"primaryKey"`
	Name        string
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}
