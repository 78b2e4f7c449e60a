package models

import "time"

// The states of an OAuth credential (Credential.Status); a static credential has none.
const (
	CredentialConnected      = "connected"
	CredentialNeedsReconnect = "needs_reconnecting"
)

// OAuthPending is one authorization code flow between "Connect with OAuth"
// and the callback. ID is the hash of the state sent to the browser;
// WebSession the hash of the console session that started it. The PKCE
// verifier and any client secret are sealed in Ciphertext.
type OAuthPending struct {
	ID         string `gorm:"primaryKey"`
	WebSession string
	UserID     string
	VaultID    string
	Prefix     string
	OAuth      string `gorm:"column:oauth"`
	KeyID      string
	Ciphertext []byte
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// TableName keeps the table's name singular-free as in the migration.
func (OAuthPending) TableName() string { return "oauth_pending" }
