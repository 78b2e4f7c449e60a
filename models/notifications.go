package models

import "time"

// NotificationChannel is where approvals are announced: a webhook (JSON or
// Slack-formatted) or email to subscribed approvers. A webhook's URL and
// signing secret are sealed together in Ciphertext; only URLHint, the URL's
// scheme and host, is kept in the clear.
type NotificationChannel struct {
	ID         string `gorm:"primaryKey"`
	Name       string
	Kind       string
	Format     string
	URLHint    string
	KeyID      string
	Ciphertext []byte
	Agents     string // agent ids, one per line; empty means every agent
	Grants     string // grant names, one per line; empty means every grant
	Enabled    bool
	CreatedBy  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// NotificationSubscription is which approvals one person wants to hear of.
type NotificationSubscription struct {
	UserID    string `gorm:"primaryKey"`
	Mode      string
	Agents    string
	Grants    string
	UpdatedAt time.Time
}

// Notification is one message in the outbox: an approval announced on one
// channel (to one recipient, for email), delivered by the notifier.
type Notification struct {
	ID            string `gorm:"primaryKey"`
	ApprovalID    string
	ChannelID     string
	Recipient     string
	State         string
	Attempts      int
	NextAttemptAt time.Time
	ClaimedUntil  *time.Time
	LastError     string
	CreatedAt     time.Time
	DeliveredAt   *time.Time
}

// NotificationAttempt is one try at delivering a notification.
type NotificationAttempt struct {
	ID             string `gorm:"primaryKey"`
	NotificationID string
	Number         int
	OK             bool
	HTTPStatus     int
	Error          string
	DurationMS     int64
	CreatedAt      time.Time
}
