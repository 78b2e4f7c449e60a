-- The generation of the sandbox's archive in the archive store: each
-- archive is stored under a new one (<id>.<generation>.tar.gz), so a
-- replica's late upload never replaces the archive another replica
-- recorded. '' is the one archive per sandbox kept before (<id>.tar.gz),
-- which records written until now name.
ALTER TABLE sandboxes ADD COLUMN archive_gen TEXT NOT NULL DEFAULT '';
