-- The checksum of the sandbox's archive as recorded when it was written, so a
-- restart tells the complete archive of an interrupted suspension from one
-- that is not the one recorded.
ALTER TABLE sandboxes ADD COLUMN archive_sha256 TEXT NOT NULL DEFAULT '';
