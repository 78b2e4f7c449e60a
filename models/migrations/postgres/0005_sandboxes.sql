-- One row per sandbox: a session's machine for one sandbox grant. The
-- lifecycle's timers are derived from these timestamps, so a restart resumes
-- them; the archive itself lives in the archive store under the same id.
CREATE TABLE sandboxes (
	id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id),
	grant_name TEXT NOT NULL,
	release_name TEXT NOT NULL,
	network TEXT NOT NULL,
	state TEXT NOT NULL,
	error TEXT NOT NULL DEFAULT '',
	started_at TIMESTAMPTZ,
	last_active_at TIMESTAMPTZ,
	suspended_at TIMESTAMPTZ,
	retired_at TIMESTAMPTZ,
	machine_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
	archive_bytes BIGINT NOT NULL DEFAULT 0,
	archive_at TIMESTAMPTZ,
	archive_error TEXT NOT NULL DEFAULT '',
	UNIQUE (session_id, grant_name)
);
CREATE INDEX sandboxes_state ON sandboxes(state, started_at);
