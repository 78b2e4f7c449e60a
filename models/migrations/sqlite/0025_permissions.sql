-- Permissions as data (seed 004): tenants, roles holding permissions, seats
-- (a person filling a role), permissions given to one person directly (a
-- vault's creator) or kept by a narrowed token, usage counted against
-- limits, and the Changes that record every change to who may do what.

-- A tenant is a customer of the operator: it holds sessions and vaults, and
-- people who belong to it see only what it holds. '' is the operator.
CREATE TABLE tenants (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL
);
ALTER TABLE users ADD COLUMN tenant_id TEXT NOT NULL DEFAULT '';
ALTER TABLE invites ADD COLUMN tenant_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN tenant_id TEXT NOT NULL DEFAULT '';
ALTER TABLE vaults ADD COLUMN tenant_id TEXT NOT NULL DEFAULT '';
-- A session's agent token may expire before the session ends.
ALTER TABLE sessions ADD COLUMN token_expires_at TIMESTAMP;
CREATE INDEX sessions_tenant ON sessions (tenant_id, created_at);
CREATE INDEX vaults_tenant ON vaults (tenant_id);

-- A role is a named set of permissions. decay_days: a seat's permission
-- unused this many days is removed by a nightly Change (0: the default).
CREATE TABLE roles (
	id TEXT PRIMARY KEY,
	tenant_id TEXT NOT NULL DEFAULT '',
	name TEXT NOT NULL,
	description TEXT NOT NULL DEFAULT '',
	decay_days INTEGER NOT NULL DEFAULT 0,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL,
	UNIQUE (tenant_id, name)
);

-- One permission: a verb (Noun.verb or Noun.*) in a scope ('*', tenant:<id>,
-- agent:<id>, vault:<id>, session:<id>), with an optional limit. It is held
-- by a role, a person directly, or a narrowed token (holder_kind).
-- Limits: limit_count per limit_period (hour, day, week, month); an input
-- ceiling (limit_field must be one of limit_values, a JSON list); a spend
-- ceiling in SC per day (limit_spend_sc). 0 / '' mean none.
CREATE TABLE permissions (
	id TEXT PRIMARY KEY,
	holder_kind TEXT NOT NULL,
	holder_id TEXT NOT NULL,
	verb TEXT NOT NULL,
	scope TEXT NOT NULL DEFAULT '*',
	limit_count INTEGER NOT NULL DEFAULT 0,
	limit_period TEXT NOT NULL DEFAULT '',
	limit_field TEXT NOT NULL DEFAULT '',
	limit_values TEXT NOT NULL DEFAULT '',
	limit_spend_sc REAL NOT NULL DEFAULT 0,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	last_used_at TIMESTAMP
);
CREATE INDEX permissions_holder ON permissions (holder_kind, holder_id);

-- A seat: a person filling a role. Removing it ends its permissions at once.
CREATE TABLE seats (
	id TEXT PRIMARY KEY,
	user_id TEXT NOT NULL,
	role_id TEXT NOT NULL,
	created_by TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	UNIQUE (user_id, role_id)
);
-- Each permission of a seat: when it was last used, and whether decay (or a
-- person) removed it from this seat (removed_by names the Change).
CREATE TABLE seat_permissions (
	seat_id TEXT NOT NULL,
	permission_id TEXT NOT NULL,
	last_used_at TIMESTAMP,
	removed_at TIMESTAMP,
	removed_by TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (seat_id, permission_id)
);

-- A token narrowed to a task holds only its own permissions rows
-- (holder_kind 'token'), never more than its holder's; parent_id is the
-- token it was narrowed from.
ALTER TABLE tokens ADD COLUMN narrowed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';

-- Usage counted against a permission's limit: one row per permission,
-- holder (a person or session) and period. Taken with a conditional update
-- so two replicas cannot both take the last unit.
CREATE TABLE limit_usage (
	permission_id TEXT NOT NULL,
	holder_id TEXT NOT NULL,
	period_start TIMESTAMP NOT NULL,
	used INTEGER NOT NULL DEFAULT 0,
	spent_sc REAL NOT NULL DEFAULT 0,
	PRIMARY KEY (permission_id, holder_id, period_start)
);

-- A Change to who may do what: roles, seats, tokens, permissions, tenants,
-- and decay's nightly narrowing. before_json/after_json are what the
-- subject was and became; an undo is itself a Change (undo_of).
CREATE TABLE changes (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	subject TEXT NOT NULL,
	summary TEXT NOT NULL DEFAULT '',
	by_kind TEXT NOT NULL,
	by_id TEXT NOT NULL,
	by_label TEXT NOT NULL DEFAULT '',
	before_json TEXT NOT NULL DEFAULT '',
	after_json TEXT NOT NULL DEFAULT '',
	action_id TEXT NOT NULL DEFAULT '',
	created_at TIMESTAMP NOT NULL,
	undone_at TIMESTAMP,
	undone_by TEXT NOT NULL DEFAULT '',
	undo_of TEXT NOT NULL DEFAULT ''
);
CREATE INDEX changes_created ON changes (created_at);

-- Every Action says why: the permission that allowed it (verb, scope, role
-- or source, limit), or the one that was missing.
ALTER TABLE actions ADD COLUMN permission TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN missing_permission TEXT NOT NULL DEFAULT '';

-- Vaults get scopes first: whoever made a vault keeps using and editing it
-- (admins and owners hold every vault through their access level).
INSERT INTO permissions (id, holder_kind, holder_id, verb, scope, created_by, created_at)
	SELECT 'perm_vault_' || id, 'user', created_by, 'Vault.*', 'vault:' || id, 'system', created_at FROM vaults WHERE created_by IN (SELECT id FROM users);
INSERT INTO permissions (id, holder_kind, holder_id, verb, scope, created_by, created_at)
	SELECT 'perm_cred_' || id, 'user', created_by, 'Credential.*', 'vault:' || id, 'system', created_at FROM vaults WHERE created_by IN (SELECT id FROM users);
