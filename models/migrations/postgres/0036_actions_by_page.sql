-- The Audit page's person filter (issue 11) matches an Action's by_id or,
-- for every caller but sessions, its by_label (a person's email: a failed
-- sign-in has only that). No index had by_label, so filtering by someone
-- rarely active walked the whole log newest first. Each half of the filter
-- now seeks its own index in the list's order (runtime: byFilter):
-- - actions_by_page replaces actions_by (by_id alone), which also serves
--   the tenant scope's by_id lookups;
-- - actions_label_page holds no session's Action: sessions' labels are not
--   matched, and an agent's calls, the hot path, do not write it.
DROP INDEX actions_by;
CREATE INDEX actions_by_page ON actions(by_id, created_at, id);
CREATE INDEX actions_label_page ON actions(by_label, created_at, id) WHERE by_kind <> 'session';
