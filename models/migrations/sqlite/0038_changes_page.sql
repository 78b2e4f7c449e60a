-- The Changes page and Change.list read newest first, by kind or subject,
-- and go on to older ones from a Change (before=). Only created_at had an
-- index, and the older page's condition could not seek it (issue 11): each
-- now seeks its index in the list's order, ties broken by id.
DROP INDEX changes_created;
CREATE INDEX changes_page ON changes(created_at, id);
CREATE INDEX changes_kind_page ON changes(kind, created_at, id);
CREATE INDEX changes_subject_page ON changes(subject, created_at, id);
