-- The program (its Program.run Action) a call ran inside, on the call's
-- row: the session page read it by scanning every ToolCall.create Action
-- of every session for one whose parent is one of the session's programs,
-- a read that grew with the whole history (issue 11). Calls already made
-- in a program take it from their Action (targets "<session> <call>"),
-- found through the partial index of Actions with a parent.
ALTER TABLE tool_calls ADD COLUMN program TEXT NOT NULL DEFAULT '';
UPDATE tool_calls SET program = a.parent_id
FROM actions a
WHERE a.parent_id <> '' AND a.verb = 'ToolCall.create'
  AND tool_calls.id = substr(a.targets, instr(a.targets, ' ') + 1);
