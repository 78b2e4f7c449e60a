-- The last storage record of a volume or an archive (lastStorageUsage),
-- read on every function call or exec that changes a session's volume and
-- by the minute's storage sweep, was found by reading every usage record:
-- no index had kind or subject (issue 11). This one holds only the two
-- storage kinds, so the records every call and machine-second write do not
-- pay for it. A query names the condition for the index to be used.
CREATE INDEX usage_records_storage ON usage_records(subject, kind, ended_at, started_at)
	WHERE kind IN ('archive_bytes', 'volume_bytes');
