-- What the last archive left out (pipes, sockets, links pointing out of
-- /workspace), so the console and the API can say so.
ALTER TABLE sandboxes ADD COLUMN archive_note TEXT NOT NULL DEFAULT '';
