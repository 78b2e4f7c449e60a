-- Approvals reach approvers: channels (signed webhooks, email), each
-- person's subscription, and an outbox the notifier delivers from, so a
-- notification is written with its approval and survives restarts.
CREATE TABLE notification_channels (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	format TEXT NOT NULL DEFAULT '',
	-- The URL's scheme and host only: a Slack URL is itself a credential.
	url_hint TEXT NOT NULL DEFAULT '',
	-- The URL and signing secret, sealed like vault secrets.
	key_id TEXT NOT NULL DEFAULT '',
	ciphertext BLOB,
	agents TEXT NOT NULL DEFAULT '',
	grants TEXT NOT NULL DEFAULT '',
	enabled BOOLEAN NOT NULL DEFAULT 1,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL
);

CREATE TABLE notification_subscriptions (
	user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
	mode TEXT NOT NULL,
	agents TEXT NOT NULL DEFAULT '',
	grants TEXT NOT NULL DEFAULT '',
	updated_at TIMESTAMP NOT NULL
);

CREATE TABLE notifications (
	id TEXT PRIMARY KEY,
	approval_id TEXT NOT NULL REFERENCES approvals(id) ON DELETE CASCADE,
	channel_id TEXT NOT NULL REFERENCES notification_channels(id) ON DELETE CASCADE,
	recipient TEXT NOT NULL DEFAULT '',
	state TEXT NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	next_attempt_at TIMESTAMP NOT NULL,
	claimed_until TIMESTAMP,
	last_error TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	delivered_at TIMESTAMP
);
CREATE INDEX notifications_due ON notifications(state, next_attempt_at);
CREATE INDEX notifications_channel ON notifications(channel_id, created_at);

CREATE TABLE notification_attempts (
	id TEXT PRIMARY KEY,
	notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
	number INTEGER NOT NULL,
	ok BOOLEAN NOT NULL DEFAULT 1,
	http_status INTEGER NOT NULL DEFAULT 0,
	error TEXT NOT NULL DEFAULT '',
	duration_ms BIGINT NOT NULL DEFAULT 0,
	created_at TIMESTAMP NOT NULL
);
CREATE INDEX notification_attempts_of ON notification_attempts(notification_id, number);
