-- Argument rules: which rule decided a tool call ("rule 2: allow command
-- `git *`", "no rule matched `rm -rf /workspace`; …"), on the call and on
-- its ToolCall.create Action.
ALTER TABLE tool_calls ADD COLUMN policy_rule TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN policy_rule TEXT NOT NULL DEFAULT '';
