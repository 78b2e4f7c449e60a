-- The Session Volume: one row per file of a session's volume. The bytes live
-- in the volume store (the data folder's volumes/<session>/, later object
-- storage); the rows make Volume.list, the limits and the Files tab a query.
-- modified_by names who wrote the file last: a person, the session's token,
-- or a tool call (call_…) whose function wrote it.
CREATE TABLE volume_files (
	session_id TEXT NOT NULL REFERENCES sessions(id),
	path TEXT NOT NULL,
	size INTEGER NOT NULL,
	sha256 TEXT NOT NULL,
	modified_at TIMESTAMP NOT NULL,
	modified_by TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (session_id, path)
);
-- What a function call read from and wrote to the volume (a JSON list of
-- {path, op}), shown on the call; no row when it touched nothing.
CREATE TABLE tool_call_volume (
	tool_call_id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL,
	access TEXT NOT NULL
);
