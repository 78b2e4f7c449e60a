package runtime

import (
	"slices"
	"sort"
)

// Access levels are presets of permissions a person holds in the console. A
// permission is the name of the verb it allows, so the Action's reason, the
// 403's missing_permission and the table in docs/permissions.md all read alike.
const (
	AccessOwner  = "owner"
	AccessAdmin  = "admin"
	AccessMember = "member"
	AccessViewer = "viewer"
	// AccessNone holds nothing of its own: such a person does only what
	// their seats' roles (and permissions given them directly) allow.
	AccessNone = "none"
)

// AccessLevels lists the presets from most to least powerful.
var AccessLevels = []string{AccessOwner, AccessAdmin, AccessMember, AccessViewer, AccessNone}

// readVerbs are granted to every access level.
var readVerbs = []string{
	"Agent.list", "Agent.get",
	"Version.list", "Version.get", "Version.tools", "Version.diff", "Version.drift",
	"Skill.list", "Skill.get",
	"Function.list", "Function.get",
	"Vault.list",
	"Role.list", "Role.get", "Seat.list", "Change.list",
	"Session.list", "Session.get", "Session.tools", "SessionRule.list",
	"ToolCall.get", "ToolCall.list",
	"Approval.list",
	"Sandbox.list", "Sandbox.get", "Sandbox.ports",
	"Sandbox.files",
	"Volume.list", "Volume.get",
	"Usage.get",
	"User.list",
	"Token.list", "Token.create", "Token.revoke",
	"Action.list",
	// A code-mode program (/mcp do): each $ call inside is checked on its own.
	"Program.run",
}

// readOnlyVerbs are the verbs that change nothing.
func readOnlyVerbs() []string {
	var out []string
	for _, v := range readVerbs {
		if v != "Token.create" && v != "Token.revoke" {
			out = append(out, v)
		}
	}
	// Reads held by fewer than every level.
	return append(out, "Subscription.get", "Channel.list", "Notification.list")
}

// memberVerbs build and run agents.
var memberVerbs = []string{
	"Agent.create", "Agent.update", "Agent.delete",
	"Version.create", "Version.update", "Version.publish", "Version.fetchTools",
	"Skill.create", "Skill.delete",
	"Function.install",
	// A member uses, reads and changes the vaults they made (the direct
	// permissions Vault.create gives, check.go) and no other.
	"Vault.create",
	"Session.create", "Session.end", "SessionRule.revoke",
	"ToolCall.create", "ToolCall.complete", "ToolCall.cancel",
	"Resource.read", "Prompt.get",
	"Approval.approve", "Approval.deny",
	"Subscription.get", "Subscription.update",
	"Archive.download",
	"Sandbox.readFile", "Sandbox.writeFile",
	"Sandbox.port",
	"Volume.put", "Volume.delete",
}

// adminVerbs manage people and destroy data that cannot be rebuilt.
var adminVerbs = []string{
	"User.invite", "User.revoke_invite", "User.update", "User.remove",
	"Archive.delete", "Archive.upload",
	"Channel.list", "Channel.create", "Channel.update", "Channel.delete", "Notification.list",
	// Every vault (issue 13): a member holds only their own.
	"Vault.get", "Vault.delete", "Vault.use", "Credential.list", "Credential.set", "Credential.delete",
	// Who may do what: roles, seats and undoing a Change.
	"Role.create", "Role.update", "Role.delete", "Seat.create", "Seat.delete", "Change.undo",
}

// ownerVerbs are held by owners alone: naming other owners.
var ownerVerbs = []string{"User.grant_owner"}

var presets = map[string][]string{
	AccessViewer: concat(readVerbs),
	AccessMember: concat(readVerbs, memberVerbs),
	AccessAdmin:  concat(readVerbs, memberVerbs, adminVerbs),
	AccessOwner:  concat(readVerbs, memberVerbs, adminVerbs, ownerVerbs),
	// Not nil: none is a level (ValidAccess), holding nothing.
	AccessNone: {},
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.Strings(out)
	return out
}

// Permissions returns the permissions an access level grants, sorted.
func Permissions(access string) []string { return slices.Clone(presets[access]) }

// ValidAccess reports whether s names an access level.
func ValidAccess(s string) bool { return presets[s] != nil }

// accessChoices says the levels in words, for a refusal naming them.
const accessChoices = "owner, admin, member, viewer, none"

// AllPermissions lists every permission any level grants, sorted.
func AllPermissions() []string { return Permissions(AccessOwner) }

func accessRank(a string) int {
	i := slices.Index(AccessLevels, a)
	if i < 0 {
		return len(AccessLevels)
	}
	return i
}
