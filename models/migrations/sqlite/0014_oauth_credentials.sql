-- OAuth credentials (authorization code + PKCE, client credentials): the
-- non-secret settings as JSON, the access token's expiry, whether the grant
-- still works, and a version that makes concurrent refreshes compare-and-swap.
-- Tokens and client secrets stay in the sealed ciphertext.
ALTER TABLE credentials ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE credentials ADD COLUMN status TEXT NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN status_detail TEXT NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN oauth TEXT NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN expires_at TIMESTAMP;
ALTER TABLE credentials ADD COLUMN refreshed_at TIMESTAMP;

-- One authorization in progress: the browser's state (hashed), the web
-- session it is bound to (hashed), and the PKCE verifier and client secret,
-- sealed. A row is used once and lives ten minutes.
CREATE TABLE oauth_pending (
	id TEXT PRIMARY KEY,
	web_session TEXT NOT NULL,
	user_id TEXT NOT NULL,
	vault_id TEXT NOT NULL REFERENCES vaults(id) ON DELETE CASCADE,
	prefix TEXT NOT NULL,
	oauth TEXT NOT NULL,
	key_id TEXT NOT NULL,
	ciphertext BLOB NOT NULL,
	created_at TIMESTAMP NOT NULL,
	expires_at TIMESTAMP NOT NULL
);
CREATE INDEX oauth_pending_expires ON oauth_pending (expires_at);
