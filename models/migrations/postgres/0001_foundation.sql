CREATE TABLE users (
	id TEXT PRIMARY KEY,
	email TEXT NOT NULL UNIQUE,
	name TEXT NOT NULL DEFAULT '',
	access TEXT NOT NULL,
	password_hash TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE invites (
	id TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	email TEXT NOT NULL DEFAULT '',
	access TEXT NOT NULL,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL,
	used_at TIMESTAMPTZ
);

CREATE TABLE web_sessions (
	id TEXT PRIMARY KEY,
	user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions(user_id);

CREATE TABLE tokens (
	id TEXT PRIMARY KEY,
	user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	name TEXT NOT NULL DEFAULT '',
	prefix TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL,
	last_used_at TIMESTAMPTZ,
	revoked_at TIMESTAMPTZ
);
CREATE INDEX tokens_user ON tokens(user_id);

CREATE TABLE actions (
	id TEXT PRIMARY KEY,
	verb TEXT NOT NULL,
	by_kind TEXT NOT NULL,
	by_id TEXT NOT NULL,
	by_label TEXT NOT NULL,
	targets TEXT NOT NULL DEFAULT '',
	verdict TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT '',
	model TEXT NOT NULL DEFAULT '',
	version TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX actions_created ON actions(created_at);
CREATE INDEX actions_verb ON actions(verb);
CREATE INDEX actions_by ON actions(by_id);

CREATE TABLE agents (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	description TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMPTZ NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL
);
