-- Who called: the client that made a tool call (an MCP client's clientInfo
-- name/version from its initialize), on the call and on its Action.
ALTER TABLE tool_calls ADD COLUMN client_info TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN client_info TEXT NOT NULL DEFAULT '';
