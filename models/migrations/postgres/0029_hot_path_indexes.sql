-- Two indexes every call's record updated and no query needs (issue 11):
-- actions_verb is the prefix of actions_verb_page (verb, created_at, id),
-- tool_calls_status the prefix of tool_calls_running_replica (status,
-- replica_id); a lookup by verb or by status uses the longer index. Each
-- index is one more page a call's commit writes.
DROP INDEX actions_verb;
DROP INDEX tool_calls_status;
