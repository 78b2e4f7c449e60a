-- A client's poll (ClientCall.next) looked for its session's calls waiting
-- for a client through tool_calls_session, walking every call the session
-- ever made to test each one's status (issue 11). This index holds only the
-- calls waiting for a client, so a poll reads those; a call enters and
-- leaves it with its status. A query names the condition for the index to
-- be used.
CREATE INDEX tool_calls_waiting ON tool_calls(session_id, created_at) WHERE status = 'waiting_client';
