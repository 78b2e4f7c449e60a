-- Browser sessions are now stored by the hash of their id, like every other
-- bearer secret; the plain ones are dropped, which signs everyone out once.
DELETE FROM web_sessions;
-- A client's claim on a call is a lease: if its long poll's answer was lost,
-- the same client gets the call again once the lease is old.
ALTER TABLE tool_calls ADD COLUMN claimed_at TIMESTAMPTZ;
