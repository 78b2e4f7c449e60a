-- Reads that went through every row a table ever held (issue 11):
-- - the Notifications page and Notification.list, newest first (50 a page),
--   sorted every notification kept (30 days by default), and one approval's
--   notifications were found by reading them all;
-- - each replica's sandbox lease renewal, every 5 seconds, read every
--   sandbox ever started to find its own;
-- - revoking a token looked for the tokens narrowed from it (up to 20
--   levels) by reading every token.
CREATE INDEX notifications_page ON notifications(created_at, id);
CREATE INDEX notifications_approval ON notifications(approval_id);
CREATE INDEX sandboxes_replica ON sandboxes(replica_id);
CREATE INDEX tokens_parent ON tokens(parent_id);
