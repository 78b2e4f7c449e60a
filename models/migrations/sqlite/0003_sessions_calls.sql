CREATE TABLE vaults (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	description TEXT NOT NULL DEFAULT '',
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL
);

CREATE TABLE credentials (
	id TEXT PRIMARY KEY,
	vault_id TEXT NOT NULL REFERENCES vaults(id) ON DELETE CASCADE,
	prefix TEXT NOT NULL,
	type TEXT NOT NULL,
	header_name TEXT NOT NULL DEFAULT '',
	username TEXT NOT NULL DEFAULT '',
	key_id TEXT NOT NULL,
	ciphertext BLOB NOT NULL,
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL,
	last_used_at TIMESTAMP,
	UNIQUE (vault_id, prefix)
);

CREATE TABLE sessions (
	id TEXT PRIMARY KEY,
	version_id TEXT NOT NULL REFERENCES versions(id),
	agent_id TEXT NOT NULL,
	title TEXT NOT NULL DEFAULT '',
	state TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	ended_at TIMESTAMP
);

CREATE TABLE session_vaults (
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	vault_id TEXT NOT NULL REFERENCES vaults(id),
	position INTEGER NOT NULL,
	PRIMARY KEY (session_id, vault_id)
);

CREATE TABLE session_rules (
	id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	tool TEXT NOT NULL,
	policy TEXT NOT NULL,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	UNIQUE (session_id, tool)
);

CREATE TABLE clients (
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	name TEXT NOT NULL,
	tools TEXT NOT NULL,
	connected_at TIMESTAMP NOT NULL,
	last_seen_at TIMESTAMP NOT NULL,
	PRIMARY KEY (session_id, name)
);

CREATE TABLE mcp_discoveries (
	url TEXT PRIMARY KEY,
	tools TEXT NOT NULL,
	error TEXT NOT NULL DEFAULT '',
	discovered_at TIMESTAMP NOT NULL
);

CREATE TABLE tool_calls (
	id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	version_id TEXT NOT NULL,
	tool TEXT NOT NULL,
	kind TEXT NOT NULL,
	grant_name TEXT NOT NULL,
	tool_name TEXT NOT NULL,
	input TEXT NOT NULL,
	input_truncated BOOLEAN NOT NULL DEFAULT FALSE,
	output TEXT NOT NULL DEFAULT '',
	output_truncated BOOLEAN NOT NULL DEFAULT FALSE,
	error TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL,
	verdict TEXT NOT NULL,
	policy_source TEXT NOT NULL DEFAULT '',
	reason TEXT NOT NULL DEFAULT '',
	model TEXT NOT NULL DEFAULT '',
	by_kind TEXT NOT NULL,
	by_id TEXT NOT NULL,
	by_label TEXT NOT NULL,
	client TEXT NOT NULL DEFAULT '',
	claimed_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	started_at TIMESTAMP,
	finished_at TIMESTAMP,
	duration_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX tool_calls_session ON tool_calls(session_id, created_at);
CREATE INDEX tool_calls_status ON tool_calls(status);

CREATE TABLE approvals (
	id TEXT PRIMARY KEY,
	tool_call_id TEXT NOT NULL UNIQUE REFERENCES tool_calls(id) ON DELETE CASCADE,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	state TEXT NOT NULL,
	scope TEXT NOT NULL DEFAULT 'call',
	reason TEXT NOT NULL DEFAULT '',
	decided_by TEXT NOT NULL DEFAULT '',
	decided_by_label TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	decided_at TIMESTAMP,
	expires_at TIMESTAMP NOT NULL
);
CREATE INDEX approvals_state ON approvals(state, created_at);

CREATE TABLE usage_records (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	session_id TEXT NOT NULL DEFAULT '',
	agent_id TEXT NOT NULL DEFAULT '',
	subject TEXT NOT NULL DEFAULT '',
	quantity REAL NOT NULL,
	unit TEXT NOT NULL,
	credits REAL NOT NULL,
	started_at TIMESTAMP NOT NULL,
	ended_at TIMESTAMP NOT NULL
);
CREATE INDEX usage_records_time ON usage_records(started_at);
