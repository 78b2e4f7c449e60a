-- usage_long lists, beside the records of about a day or more, every record
-- that crosses a UTC midnight (runtime: listedLong). A period's first
-- partial day then reads only the records begun on its start's day, and a
-- period starting at a midnight (the Dashboard's today, the Usage page's
-- dates) none: those that began before it and end within it are all here.
-- Before, both read every record of the day before the period (issue 11).
INSERT OR IGNORE INTO usage_long (record_id, ended_at)
SELECT id, ended_at FROM usage_records WHERE date(started_at) <> date(ended_at);
