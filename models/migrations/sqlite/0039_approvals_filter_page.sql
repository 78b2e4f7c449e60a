-- The decided approvals filtered by agent, tool, grant or session, or seen by
-- a tenant's people, read newest first through (decided_at, id) and kept the
-- few that matched: a rare tool, or a tenant with a small share of a long
-- history, walked all of it (issue 11). An approval now carries its call's
-- agent, tool and grant and its session's tenant, facts that never change,
-- and each filter seeks its own index in the list's order. Pending
-- approvals, ordered by when they were asked, are few (they expire).
ALTER TABLE approvals ADD COLUMN tenant_id TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN tool TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN grant_name TEXT NOT NULL DEFAULT '';
UPDATE approvals SET
	tenant_id = COALESCE((SELECT s.tenant_id FROM sessions s WHERE s.id = approvals.session_id), ''),
	agent_id = COALESCE((SELECT s.agent_id FROM sessions s WHERE s.id = approvals.session_id), ''),
	tool = COALESCE((SELECT c.tool FROM tool_calls c WHERE c.id = approvals.tool_call_id), ''),
	grant_name = COALESCE((SELECT c.grant_name FROM tool_calls c WHERE c.id = approvals.tool_call_id), '');
DROP INDEX approvals_session;
CREATE INDEX approvals_session_page ON approvals(session_id, decided_at, id);
CREATE INDEX approvals_tenant_page ON approvals(tenant_id, decided_at, id);
CREATE INDEX approvals_agent_page ON approvals(agent_id, decided_at, id);
CREATE INDEX approvals_tool_page ON approvals(tool, decided_at, id);
CREATE INDEX approvals_grant_page ON approvals(grant_name, decided_at, id);
