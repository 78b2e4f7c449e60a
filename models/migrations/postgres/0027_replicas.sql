-- Several replicas on one database (issue 19). Each `subako serve` registers
-- a row at start and heartbeats it; a replica whose heartbeat is older than
-- 20 s is dead. url is its --advertise-url, for peers to forward to.
CREATE TABLE replicas (
	id TEXT PRIMARY KEY,
	url TEXT NOT NULL DEFAULT '',
	started_at TIMESTAMPTZ NOT NULL,
	heartbeat_at TIMESTAMPTZ NOT NULL,
	stopped_at TIMESTAMPTZ
);

-- A lease lets one replica run a timer that must run once (approval expiry,
-- decay, the notification outbox …): taken with one conditional upsert.
CREATE TABLE leases (
	name TEXT PRIMARY KEY,
	holder TEXT NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);

-- The replica running a call: startup recovery interrupts only calls of its
-- own earlier run or of dead replicas.
ALTER TABLE tool_calls ADD COLUMN replica_id TEXT NOT NULL DEFAULT '';
CREATE INDEX tool_calls_running_replica ON tool_calls (status, replica_id);

-- The replica that owns a running sandbox, and until when its heartbeat
-- holds it.
ALTER TABLE sandboxes ADD COLUMN replica_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sandboxes ADD COLUMN lease_expires_at TIMESTAMPTZ;
