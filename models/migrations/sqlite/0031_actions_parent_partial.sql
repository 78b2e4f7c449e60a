-- actions_parent held every Action, nearly all of them with no parent
-- (parent_id ''), so every Action's insert wrote a page of it that no
-- query reads: the index is looked up only for a parent that is set (a
-- code-mode program's calls). It now holds only those (issue 11). A query
-- names the condition (parent_id <> '') for the index to be used.
DROP INDEX actions_parent;
CREATE INDEX actions_parent ON actions (parent_id) WHERE parent_id <> '';
