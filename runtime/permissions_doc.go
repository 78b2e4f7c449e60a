package runtime

import (
	"fmt"
	"strings"
)

// PermissionsDoc is docs/permissions.md, generated from the presets and the
// verb registry (TestPermissionsDocIsGenerated fails when the file is stale;
// SUBAKO_UPDATE_DOCS=1 go test -run TestPermissionsDocIsGenerated ./runtime/
// writes it).
func PermissionsDoc() string {
	var b strings.Builder
	b.WriteString(`# Permissions

<!-- Generated from runtime/permissions.go by runtime.PermissionsDoc: do not edit by hand.
     SUBAKO_UPDATE_DOCS=1 go test -run TestPermissionsDocIsGenerated ./runtime/ -->

A permission names a verb (` + "`Noun.verb`" + `, or ` + "`Noun.*`" + ` for every verb of a noun), a
**scope**, and optionally a **limit**. The Action record, a 403's
` + "`missing_permission`" + ` and this page all read alike.

Scopes, stored by id and shown by name where the noun has one:

- ` + "`*`" + ` — everything;
- ` + "`tenant:<id>`" + ` — one tenant (a customer of the operator) and the sessions and vaults it holds;
- ` + "`agent:<id>`" + ` — one agent, its versions and the sessions that run them;
- ` + "`vault:<id>`" + ` — one vault and its credentials;
- ` + "`session:<id>`" + ` — one session, its tool calls, approvals, sandboxes and rules.

Every verb passes one check (` + "`runtime/check.go`" + `, called by the runtime's ` + "`run`" + `
for each verb, below the API, the console, ` + "`subako do`" + ` and the MCP endpoint). It
resolves the nouns the call names to the scopes that cover them and finds a
permission of the verb whose scope covers them all, then takes its limit (a
count per hour, day, week or month; a ceiling on an input; a spend ceiling in
SC a day). A refused call is recorded on the Audit page as ` + "`refused`" + ` with the
reason ` + "`missing permission Vault.use vault:customer-a`" + `, and the API answers 403
with ` + "`\"code\": \"permission_denied\"`" + ` and ` + "`\"missing_permission\": \"Vault.use vault:customer-a\"`" + `.
An allowed call's Action records the permission that allowed it
(` + "`Vault.* vault:vlt_… (direct)`" + `, ` + "`Session.create * (member preset)`" + `,
` + "`Approval.approve session:ses_… (role Billing; 20 a day)`" + `). A person of a tenant
asking about anything outside their tenant gets 404: its existence is not revealed.

People hold permissions in three ways, and hold the union of them:

1. an **access level**, a preset, on everything (on their tenant, for a tenant's people);
2. **roles**, named sets of permissions, through **seats** (removing a seat
   ends its permissions at the next request of any cookie, token or open live page);
3. permissions given to them **directly**: whoever creates a vault is given
   ` + "`Vault.*`" + ` and ` + "`Credential.*`" + ` on it.

Presets:

- **owner** — everything, including naming, changing and removing owners
  (` + "`User.grant_owner`" + `). An installation always keeps at least one owner: the last
  owner can be neither removed nor demoted.
- **admin** — everything but owners: invites people, changes levels, removes
  people, deletes retired sandboxes' archives, manages notification channels
  (` + "`Channel.*`" + `) and reads their deliveries (` + "`Notification.list`" + `), every vault
  (` + "`Vault.*`" + `, ` + "`Credential.*`" + `), roles, seats, and undoes Changes.
- **member** — builds and runs agents: agents and versions, skills, functions,
  sessions, tool calls, approvals, archive downloads, and which approvals email
  them (` + "`Subscription.get`" + `, ` + "`Subscription.update`" + `). A member creates vaults and
  uses, reads and changes **only the vaults they hold permissions on** (their
  own, or given through a role): binding another's vault to a session
  (` + "`Vault.use`" + `, checked by ` + "`Session.create`" + ` for each vault), reading it, listing or
  setting its credentials and deleting it are refused; ` + "`Vault.list`" + ` shows only
  the vaults they may read.
- **viewer** — reads everything the console shows but vaults, and manages their own API tokens.
- **none** — holds nothing of its own: the person does only what the roles of
  their seats (and permissions given them directly, such as a vault they made
  through a role's ` + "`Vault.create`" + `) allow. Unseated, they hold nothing: their next
  request, through the console, a token or an open live page, is refused naming
  the missing permission. Pages they cannot use answer 403 naming it.

A few rules depend on the target, not only the verb, and live in the runtime too:
only owners (` + "`User.grant_owner`" + `) may invite, change or remove an owner; a person
revokes their own tokens, and whoever may remove people may revoke anyone's
but an owner's, which only owners may revoke.

A session's token reads and writes its own session's volume (` + "`Volume.*`" + `) and no
other's.

A removed person's browser sessions and tokens are deleted with them: their next
request is refused.

`)
	b.WriteString("| permission | owner | admin | member | viewer | none |\n|---|:-:|:-:|:-:|:-:|:-:|\n")
	for _, v := range AllPermissions() {
		fmt.Fprintf(&b, "| `%s` |", v)
		for _, level := range AccessLevels {
			mark := " "
			if UserPrincipal("", "", level).Can(v) {
				mark = "✓"
			}
			fmt.Fprintf(&b, " %s |", mark)
		}
		b.WriteString("\n")
	}
	var others []string
	for _, v := range AllVerbs() {
		if !UserPrincipal("", "", AccessOwner).Can(v) {
			others = append(others, "`"+v+"`")
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "\nVerbs no access level holds, only a session's token: %s.\n", strings.Join(others, ", "))
	}
	b.WriteString(permissionsDocLimits)
	return b.String()
}
