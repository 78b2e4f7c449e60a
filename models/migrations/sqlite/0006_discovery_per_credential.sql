-- Discovered tool lists are kept per credential: a session sees only what its
-- own credential discovered, never another customer's list. The table is a
-- cache, so it is rebuilt empty.
DROP TABLE mcp_discoveries;
CREATE TABLE mcp_discoveries (
	url TEXT NOT NULL,
	credential_id TEXT NOT NULL DEFAULT '',
	tools TEXT NOT NULL,
	error TEXT NOT NULL DEFAULT '',
	discovered_at TIMESTAMP NOT NULL,
	PRIMARY KEY (url, credential_id)
);
