-- Every list page reads one page by cursor: ORDER BY (time, id) newest
-- first, starting after the last row seen. These indexes are what those
-- queries seek, so a page costs the same at a hundred rows or a million.

-- Sessions: all, by state (the dashboard's active ones), by agent.
CREATE INDEX sessions_page ON sessions(created_at, id);
CREATE INDEX sessions_state_page ON sessions(state, created_at, id);
CREATE INDEX sessions_agent_page ON sessions(agent_id, created_at, id);
CREATE INDEX session_vaults_vault ON session_vaults(vault_id);

-- Actions: the audit log, and its verb and verdict filters. The older index
-- on created_at alone is covered by the new one.
DROP INDEX actions_created;
CREATE INDEX actions_page ON actions(created_at, id);
CREATE INDEX actions_verb_page ON actions(verb, created_at, id);
CREATE INDEX actions_verdict_page ON actions(verdict, created_at, id);

-- Approvals: the history is ordered by when they were decided.
CREATE INDEX approvals_decided_page ON approvals(decided_at, id);
CREATE INDEX approvals_state_decided_page ON approvals(state, decided_at, id);
CREATE INDEX approvals_session ON approvals(session_id);

-- Sandboxes get the time their row was made: started_at moves at every
-- resume, so a list ordered by it could show a row twice or never.
ALTER TABLE sandboxes ADD COLUMN created_at TIMESTAMP NOT NULL DEFAULT '0001-01-01 00:00:00+00:00';
UPDATE sandboxes SET created_at = COALESCE(started_at, suspended_at, retired_at, last_active_at, created_at);
CREATE INDEX sandboxes_page ON sandboxes(created_at, id);

-- Usage records: newest first, for all, a session or an agent.
DROP INDEX usage_records_time;
CREATE INDEX usage_records_page ON usage_records(started_at, id);
CREATE INDEX usage_records_session ON usage_records(session_id, started_at);
CREATE INDEX usage_records_agent ON usage_records(agent_id, started_at);
