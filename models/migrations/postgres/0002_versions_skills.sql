CREATE TABLE versions (
	id TEXT PRIMARY KEY,
	agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
	number INTEGER NOT NULL,
	state TEXT NOT NULL,
	config TEXT NOT NULL,
	from_version_id TEXT NOT NULL DEFAULT '',
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMPTZ NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL,
	published_at TIMESTAMPTZ,
	UNIQUE (agent_id, number)
);

CREATE TABLE skills (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	description TEXT NOT NULL DEFAULT '',
	file_count INTEGER NOT NULL DEFAULT 0,
	total_bytes INTEGER NOT NULL DEFAULT 0,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE skill_files (
	skill_id TEXT NOT NULL REFERENCES skills(id) ON DELETE CASCADE,
	path TEXT NOT NULL,
	content BYTEA NOT NULL,
	size INTEGER NOT NULL,
	mode INTEGER NOT NULL DEFAULT 420,
	PRIMARY KEY (skill_id, path)
);

CREATE TABLE function_packages (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	version TEXT NOT NULL,
	description TEXT NOT NULL DEFAULT '',
	manifest TEXT NOT NULL,
	wasm_sha256 TEXT NOT NULL,
	wasm_size INTEGER NOT NULL,
	compile_ms INTEGER NOT NULL DEFAULT 0,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMPTZ NOT NULL,
	UNIQUE (name, version)
);
