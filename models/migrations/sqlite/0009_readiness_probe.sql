-- One row per replica, rewritten by /readyz: a write that fails or stalls
-- (a full disk, a read-only database) makes the replica not ready.
CREATE TABLE readiness_probes (
    replica TEXT PRIMARY KEY,
    written_at TIMESTAMP NOT NULL
);
