-- The Usage page's totals and chart read a rollup of usage records by the UTC
-- day they started, kind and agent (issue 11), written with each record in
-- its transaction by one upsert; slot spreads one day's records over a few
-- rows so that concurrent writers do not all wait on one. A record of one
-- day sums into its row exactly as the page sums records: quantity, the
-- storage kinds' byte-seconds (whole seconds, as runtime.usageSums counts
-- them), credits, and how many records.
CREATE TABLE usage_days (
	day TEXT NOT NULL,
	kind TEXT NOT NULL,
	agent_id TEXT NOT NULL DEFAULT '',
	slot INTEGER NOT NULL DEFAULT 0,
	unit TEXT NOT NULL DEFAULT '',
	quantity REAL NOT NULL DEFAULT 0,
	byte_seconds REAL NOT NULL DEFAULT 0,
	credits REAL NOT NULL DEFAULT 0,
	records INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (day, kind, agent_id, slot)
);
INSERT INTO usage_days (day, kind, agent_id, slot, unit, quantity, byte_seconds, credits, records)
SELECT date(started_at), kind, agent_id, 0, MAX(unit), SUM(quantity),
	SUM(quantity * (strftime('%s', ended_at) - strftime('%s', started_at))), SUM(credits), COUNT(*)
FROM usage_records GROUP BY date(started_at), kind, agent_id;

-- Records that last about a day or more: a period starting at from counts a
-- record that began before from but ended after it, and these are the only
-- ones that can have begun more than a day before from.
CREATE TABLE usage_long (
	record_id TEXT PRIMARY KEY,
	ended_at TIMESTAMP NOT NULL
);
CREATE INDEX usage_long_ended ON usage_long(ended_at);
INSERT INTO usage_long (record_id, ended_at)
SELECT id, ended_at FROM usage_records
WHERE strftime('%s', ended_at) - strftime('%s', started_at) >= 82800;
