-- Code mode (issue 14). An Action made by a $ call inside a code-mode program
-- names the program's Action (parent_id), and a program's Action keeps its
-- text (program, at most 64 KiB), so any output traces back to who ran what.
ALTER TABLE actions ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN program TEXT NOT NULL DEFAULT '';
CREATE INDEX actions_parent ON actions (parent_id);

-- What /mcp offers a token: 'code' (search, fetch, do) or 'flat' (one tool a verb).
ALTER TABLE tokens ADD COLUMN tools TEXT NOT NULL DEFAULT 'code';
