package verbs

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// declared is every verb of the API, in API.md's order. A verb's canonical
// route follows the rule GET|POST|PUT|PATCH|DELETE on the noun for plain reads
// and writes, POST /nouns/{noun}/verb for the rest; older paths stay as
// Aliases. Path parameters are added to Input as required strings (finish).
func declared() []Verb {
	const (
		get, post, put, patch, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	)
	vs := []Verb{
		{Name: "Agent.list", Method: get, Path: "/agents", Read: true, Doc: "Lists the agents.",
			Output: list(agentOut)},
		{Name: "Agent.create", Method: post, Path: "/agents", Doc: "Creates an agent with a name and a description.",
			Input: agentIn(true), Output: agentOut},
		{Name: "Agent.get", Method: get, Path: "/agents/:agent", Read: true, Doc: "Reads one agent by id.",
			Output: agentOut},
		{Name: "Agent.update", Method: patch, Path: "/agents/:agent", Doc: "Renames an agent or changes its description.",
			Input: agentIn(false), Output: agentOut},
		{Name: "Agent.delete", Method: del, Path: "/agents/:agent", Doc: "Deletes an agent that has no sessions (409 agent_has_sessions otherwise)."},

		{Name: "Version.list", Method: get, Path: "/agents/:agent/versions", Read: true, Doc: "Lists an agent's versions, newest first.",
			Output: list(versionOut)},
		{Name: "Version.create", Method: post, Path: "/agents/:agent/versions", Doc: "Creates a draft version from a config or as a copy of another version (from).",
			Input: obj(prop("config", anyObj("the agent config: mcp_servers, skills, sandboxes, functions, builtins")), prop("from", str("a version id to copy"))), Output: versionOut},
		{Name: "Version.get", Method: get, Path: "/versions/:version", Read: true, Doc: "Reads one version: its number, state (draft or published) and agent config.",
			Output: versionOut},
		{Name: "Version.update", Method: put, Path: "/versions/:version/config", Body: BodyWhole, Doc: "Replaces a draft version's agent config (409 version_published on a published one).",
			Input: obj(req("body", anyObj("the whole agent config"))), Output: versionOut},
		{Name: "Version.publish", Method: post, Path: "/versions/:version/publish", Doc: "Publishes a draft version; new sessions run it.",
			Output: versionOut},
		{Name: "Version.tools", Method: get, Path: "/versions/:version/tools", Read: true, Doc: "Lists every tool of a version with its kind, grant, policy and whether it is offered.",
			Output: list(toolOut)},
		{Name: "Version.diff", Method: get, Path: "/versions/:version/diff", Read: true, Doc: "Compares a version's config and tools against another version (against).",
			Input: obj(prop("against", str("the version to compare against; default the agent's published version"))), Output: anyObj("the differences")},
		{Name: "Version.fetchTools", Method: post, Path: "/versions/:version/fetchTools", Aliases: []string{"/versions/:version/tools/fetch"},
			Doc: "Asks a version's MCP servers and functions for their tools now and pins what they list.", Output: anyObj("the fetched tools per grant")},
		{Name: "Version.drift", Method: get, Path: "/versions/:version/drift", Read: true, Doc: "Says how the tools the servers list now differ from the tools the version pinned.",
			Output: anyObj("the drift per grant")},

		{Name: "Skill.list", Method: get, Path: "/skills", Read: true, Doc: "Lists the skills.", Output: list(skillOut)},
		{Name: "Skill.create", Method: post, Path: "/skills", Doc: "Creates a skill from files (utf-8 or base64).",
			Input: obj(req("name", str("1-32 of a-z, 0-9 and -")), prop("description", str("")), req("files", arr(obj(
				req("path", str("relative path in the skill")), req("content", str("the file's content")),
				prop("encoding", enum("utf-8 (default) or base64", "utf-8", "base64")), prop("mode", anyOf("0644 or 0755", str(""), integer(""))))))),
			Output: skillOut},
		{Name: "Skill.get", Method: get, Path: "/skills/:skill", Read: true, Doc: "Reads a skill by id or name and lists its files without their contents.", Output: skillOut},
		{Name: "Skill.delete", Method: del, Path: "/skills/:skill", Doc: "Deletes a skill no version uses (409 skill_in_use otherwise)."},

		{Name: "Function.list", Method: get, Path: "/functions", Read: true, Doc: "Lists the installed function packages.", Output: list(functionOut)},
		{Name: "Function.install", Method: post, Path: "/functions", Doc: "Installs a function package: its manifest and its WASM module as base64.",
			Input:  obj(req("manifest", anyObj("the package manifest")), req("wasm_base64", str("the WASM module, base64")), prop("name", str("must match the manifest")), prop("version", str("must match the manifest"))),
			Output: functionOut},
		{Name: "Function.get", Method: get, Path: "/functions/:name/:version", Read: true, Doc: "Reads one installed function package version.",
			Input: obj(req("name", str("the package's name")), req("version", str("the package's version, e.g. 1.0.0"))), Output: functionOut},

		{Name: "Vault.list", Method: get, Path: "/vaults", Read: true, Doc: "Lists the vaults the caller may see, with their credentials' prefixes (never secrets).", Output: list(vaultOut)},
		{Name: "Vault.create", Method: post, Path: "/vaults", Doc: "Creates a vault to hold credentials.",
			Input: obj(req("name", str("1-32 of a-z, 0-9 and -")), prop("description", str("")), prop("tenant", str("a tenant id or name; empty for the operator"))), Output: vaultOut},
		{Name: "Vault.get", Method: get, Path: "/vaults/:vault", Read: true, Doc: "Reads one vault with its credentials (never their secrets).", Output: vaultOut},
		{Name: "Vault.delete", Method: del, Path: "/vaults/:vault", Doc: "Deletes a vault no open session uses (409 vault_in_use otherwise)."},

		{Name: "Credential.list", Method: get, Path: "/vaults/:vault/credentials", Read: true, Doc: "Lists a vault's credentials without their secrets.", Output: list(credentialOut)},
		{Name: "Credential.set", Method: put, Path: "/vaults/:vault/credentials", Doc: "Sets the credential for a URL prefix in a vault (setting it again rotates it); secrets are write-only.",
			Input: obj(req("prefix", str("the URL prefix the credential is attached to, at most 2,048 characters")),
				req("type", enum("how the secret is sent", "bearer", "header", "basic", "client_credentials", "oauth")),
				prop("secret", str("the secret, at most 8,192 bytes; never answered")), prop("header_name", str("for type header, at most 128 characters")),
				prop("username", str("for type basic, at most 256 characters")), prop("token_url", str("for OAuth types")), prop("client_id", str("for OAuth types")),
				prop("scopes", str("for OAuth types, space-separated"))),
			Output: credentialOut},
		{Name: "Credential.delete", Method: del, Path: "/vaults/:vault/credentials/:credential", Doc: "Deletes one credential of a vault."},

		{Name: "Session.list", Method: get, Path: "/sessions", Read: true, Doc: "Lists sessions, newest first, a page at a time.",
			Input: pageIn(prop("agent", str("only this agent's")), prop("state", str("open or ended"))), Output: list(sessionOut)},
		{Name: "Session.create", Method: post, Path: "/sessions", Doc: "Starts a session of a published version with vaults; the answer holds the session's token, once.",
			Input: obj(req("version", str("the version id (published, or a draft to try)")), prop("vaults", arr(str("a vault id or name"))), prop("title", str("")),
				prop("tenant", str("a tenant id or name")), prop("token_expires", str("how long the session's token works, e.g. 2h or 30d, at most 365 d"))),
			Output: sessionOut},
		{Name: "Session.get", Method: get, Path: "/sessions/:session", Read: true, Doc: "Reads one session.", Output: sessionOut},
		{Name: "Session.end", Method: post, Path: "/sessions/:session/end", Doc: "Ends a session: its token stops working and its sandboxes are suspended.", Output: sessionOut},
		{Name: "Session.tools", Method: get, Path: "/sessions/:session/tools", Read: true, Doc: "Lists the tools a session offers its agent: name, description, input schema and policy.",
			Input: obj(prop("refresh", boolean("re-discover the MCP servers' tools with this session's credential"))), Output: list(offeredToolOut)},

		{Name: "ToolCall.create", Method: post, Path: "/sessions/:session/tool_calls", Doc: "Calls a tool of a session: 200 with the finished call, or 202 while it awaits approval.",
			Input: obj(req("tool", str("the tool's name as Session.tools lists it")), prop("input", anyObj("the tool's input")), prop("model", str("the model that asked for the call")),
				prop("wait_seconds", integer("how long to wait for an approval before answering 202"))),
			Output: toolCallOut},
		{Name: "ToolCall.get", Method: get, Path: "/tool_calls/:call", Read: true, Doc: "Reads one tool call: its status, verdict, input, output and timing.", Output: toolCallOut},
		{Name: "ToolCall.list", Method: get, Path: "/sessions/:session/tool_calls", Read: true, Doc: "Lists a session's tool calls.", Output: list(toolCallOut)},
		{Name: "ToolCall.complete", Method: post, Path: "/tool_calls/:call/complete", Aliases: []string{"/tool_calls/:call/result"},
			Doc:   "Gives a waiting call its output or error (client tools and ask_user).",
			Input: obj(prop("output", anyValue("the call's output")), prop("error", str("why the call failed"))), Output: toolCallOut},
		{Name: "ToolCall.cancel", Method: post, Path: "/tool_calls/:call/cancel", Doc: "Cancels a call the caller no longer wants.",
			Input: obj(prop("reason", str(""))), Output: toolCallOut},

		{Name: "SessionRule.list", Method: get, Path: "/sessions/:session/rules", Read: true, Doc: "Lists a session's allow-for-this-session rules, oldest first.", Output: list(sessionRuleOut)},
		{Name: "SessionRule.revoke", Method: del, Path: "/sessions/:session/rules/:rule", Doc: "Revokes a session rule: the tool asks first again from the next call."},

		{Name: "Client.connect", Method: put, Path: "/sessions/:session/clients/:client", Doc: "Connects a client to a session with the tools it serves itself.",
			Input: obj(req("tools", arr(obj(req("name", str("")), prop("description", str("")), prop("input_schema", anyObj("a JSON Schema")))))), Output: anyObj("the connected client")},
		{Name: "ClientCall.next", Method: get, Path: "/sessions/:session/clients/:client/calls", Doc: "Waits for the next call of a client's tool (long poll).",
			Input: obj(prop("wait", integer("seconds to wait, at most 30"))), Output: anyObj("the next call, or none")},

		{Name: "Volume.list", Method: get, Path: "/sessions/:session/volume", Read: true, Doc: "Lists the files of a session's volume with its limits.",
			Input: obj(prop("prefix", str("only paths under this folder"))), Output: anyObj("{session, files, count, total_bytes, limits}")},
		{Name: "Volume.get", Method: get, Path: "/sessions/:session/volume/*", Read: true, Doc: "Reads one file of a session's volume (bytes)."},
		{Name: "Volume.put", Method: put, Path: "/sessions/:session/volume/*", Body: BodyRaw, Doc: "Writes one file of a session's volume whole (the body is the file).",
			Input: obj(req("body", bytes("the file"))), Output: anyObj("the file written")},
		{Name: "Volume.delete", Method: del, Path: "/sessions/:session/volume/*", Doc: "Deletes one file of a session's volume."},

		{Name: "Approval.list", Method: get, Path: "/approvals", Read: true, Doc: "Lists approvals: pending by default, or approved, denied, expired, cancelled, decided.",
			Input: pageIn(prop("state", enum("", "pending", "approved", "denied", "expired", "cancelled", "decided")), prop("agent", str("")), prop("session", str("")),
				prop("grant", str("")), prop("tool", str("")), prop("q", str("text to find")), prop("approval", str("")), prop("order", enum("", "oldest", "newest"))),
			Output: list(approvalOut)},
		{Name: "Approval.approve", Method: post, Path: "/approvals/:approval/approve", Doc: "Approves a waiting call, for this call or for the rest of the session.",
			Input: decisionIn(), Output: approvalOut},
		{Name: "Approval.deny", Method: post, Path: "/approvals/:approval/deny", Doc: "Denies a waiting call with a reason the agent sees.",
			Input: decisionIn(), Output: approvalOut},

		{Name: "Channel.list", Method: get, Path: "/channels", Read: true, Doc: "Lists notification channels.", Output: list(anyObj("a channel"))},
		{Name: "Channel.create", Method: post, Path: "/channels", Doc: "Creates a notification channel (email or webhook).", Input: anyObj("the channel"), Output: anyObj("the channel")},
		{Name: "Channel.update", Method: patch, Path: "/channels/:channel", Doc: "Changes a notification channel.", Input: anyObj("the fields to change"), Output: anyObj("the channel")},
		{Name: "Channel.delete", Method: del, Path: "/channels/:channel", Doc: "Deletes a notification channel."},
		{Name: "Notification.list", Method: get, Path: "/notifications", Read: true, Doc: "Lists the notification outbox, newest first, with each one's tries.",
			Input: obj(prop("channel", str("")), prop("approval", str("")), prop("state", str("")), prop("limit", integer(""))), Output: list(anyObj("a notification"))},
		{Name: "Subscription.get", Method: get, Path: "/subscription", Read: true, Doc: "Reads what the caller chose to be emailed about.", Output: anyObj("the subscription")},
		{Name: "Subscription.update", Method: put, Path: "/subscription", Doc: "Sets what the caller is emailed about.", Input: anyObj("the subscription"), Output: anyObj("the subscription")},

		{Name: "Sandbox.list", Method: get, Path: "/sandboxes", Read: true, Doc: "Lists sandboxes with their state, machine time and archive.",
			Input: pageIn(prop("session", str("only this session's"))), Output: list(sandboxOut)},
		{Name: "Sandbox.get", Method: get, Path: "/sandboxes/:sandbox", Read: true, Doc: "Reads one sandbox.", Output: sandboxOut},
		{Name: "Archive.download", Method: get, Path: "/sandboxes/:sandbox/archive", Read: true, Doc: "Downloads a sandbox's archive (.tar.gz bytes)."},
		{Name: "Archive.delete", Method: del, Path: "/sandboxes/:sandbox/archive", Doc: "Deletes a retired sandbox's archive (409 sandbox_not_retired otherwise)."},
		{Name: "Archive.upload", Method: put, Path: "/sandboxes/:sandbox/archive", Body: BodyRaw, Doc: "Replaces a suspended or retired sandbox's archive with a .tar.gz, checked as a restore would.",
			Input: obj(req("body", bytes("the .tar.gz"))), Output: sandboxOut},
		{Name: "Sandbox.files", Method: get, Path: "/sandboxes/:sandbox/files", Read: true, Doc: "Lists one folder of a sandbox's /workspace, from the machine or its archive.",
			Input: obj(prop("path", str("the folder; empty for /workspace"))), Output: anyObj("{sandbox, path, source, entries, truncated, limits}")},
		{Name: "Sandbox.readFile", Method: get, Path: "/sandboxes/:sandbox/files/*", Read: true, Doc: "Reads one file of a sandbox's /workspace (bytes, at most 32 MiB)."},
		{Name: "Sandbox.writeFile", Method: put, Path: "/sandboxes/:sandbox/files/*", Body: BodyRaw, Doc: "Writes one file of a running sandbox's /workspace whole (the body is the file).",
			Input: obj(req("body", bytes("the file"))), Output: anyObj("{name, path, type, size, modified_at}")},
		{Name: "Sandbox.ports", Method: get, Path: "/sandboxes/:sandbox/ports", Read: true, Doc: "Lists what listens inside a running sandbox.",
			Output: arr(obj(req("port", integer("")), prop("address", str(""))))},
		{Name: "Sandbox.port", Method: post, Path: "/sandboxes/:sandbox/ports/:port", Doc: "Opens an hour's preview of what listens on a port inside a running sandbox.",
			Output: obj(req("sandbox", str("")), req("port", integer("")), req("ticket", str("")), req("path", str("the preview's path")), req("expires_at", str("")))},

		{Name: "Usage.get", Method: get, Path: "/usage", Read: true, Doc: "Reads usage and credits over a period, with totals by kind, days and records.",
			Input:  pageIn(prop("from", str("a date or RFC 3339 time")), prop("to", str("a date (that whole day) or RFC 3339 time")), prop("session", str("")), prop("agent", str(""))),
			Output: anyObj("{from, to, credits, totals, days, records}")},

		{Name: "User.list", Method: get, Path: "/users", Read: true, Doc: "Lists the people and their access levels.", Output: list(userOut)},
		{Name: "User.invite", Method: post, Path: "/users", Doc: "Invites a person by email at an access level; the answer holds the invitation link.",
			Input:  obj(req("email", str("")), req("access", enum("", "owner", "admin", "member", "viewer", "none")), prop("tenant", str("a tenant id or name"))),
			Output: anyObj("the invitation")},
		{Name: "User.update", Method: patch, Path: "/users/:user", Doc: "Changes a person's access level or name.",
			Input: obj(prop("access", enum("", "owner", "admin", "member", "viewer", "none")), prop("name", str("the person's name"))), Output: userOut},
		{Name: "User.remove", Method: del, Path: "/users/:user", Doc: "Removes a person; their tokens stop working at once."},
		{Name: "User.revoke_invite", Method: del, Path: "/invites/:invite", Doc: "Revokes a pending invitation; its link stops working."},

		{Name: "Tenant.list", Method: get, Path: "/tenants", Read: true, Doc: "Lists tenants with their counts of sessions, vaults and people.", Output: list(tenantOut)},
		{Name: "Tenant.create", Method: post, Path: "/tenants", Doc: "Creates a tenant.", Input: obj(req("name", str("1-32 of a-z, 0-9 and -"))), Output: tenantOut},
		{Name: "Tenant.get", Method: get, Path: "/tenants/:tenant", Read: true, Doc: "Reads one tenant by id or name.", Output: tenantOut},
		{Name: "Tenant.update", Method: patch, Path: "/tenants/:tenant", Doc: "Renames a tenant.", Input: obj(prop("name", str(""))), Output: tenantOut},
		{Name: "Tenant.delete", Method: del, Path: "/tenants/:tenant", Doc: "Deletes an empty tenant (409 tenant_not_empty otherwise)."},

		{Name: "Role.list", Method: get, Path: "/roles", Read: true, Doc: "Lists roles, the access levels among them as built-in roles.", Output: list(roleOut)},
		{Name: "Role.create", Method: post, Path: "/roles", Doc: "Creates a role: a named set of permissions (verb, scope, limit).", Input: roleIn(), Output: roleOut},
		{Name: "Role.get", Method: get, Path: "/roles/:role", Read: true, Doc: "Reads one role with its permissions and seats.", Output: roleOut},
		{Name: "Role.update", Method: patch, Path: "/roles/:role", Doc: "Renames a role or replaces its permissions.", Input: roleIn(), Output: roleOut},
		{Name: "Role.delete", Method: del, Path: "/roles/:role", Doc: "Deletes a role; its seats go with it."},
		{Name: "Seat.list", Method: get, Path: "/seats", Read: true, Doc: "Lists seats: who fills which role.",
			Input: obj(prop("user", str("")), prop("role", str(""))), Output: list(seatOut)},
		{Name: "Seat.create", Method: post, Path: "/seats", Doc: "Seats a person in a role.", Input: obj(req("user", str("")), req("role", str(""))), Output: seatOut},
		{Name: "Seat.delete", Method: del, Path: "/seats/:seat", Doc: "Unseats a person; refused from their next request."},
		{Name: "Change.list", Method: get, Path: "/changes", Read: true, Doc: "Lists changes to roles, seats, permissions and tokens with before and after.",
			Input: obj(prop("kind", str("")), prop("subject", str("")), prop("limit", integer("")), prop("before", str(""))), Output: list(anyObj("a change"))},
		{Name: "Change.undo", Method: post, Path: "/changes/:change/undo", Doc: "Undoes a change, itself recorded as a change.", Output: anyObj("the new change")},

		{Name: "Token.list", Method: get, Path: "/tokens", Read: true, Doc: "Lists the caller's API tokens (never the token itself).", Output: list(tokenOut)},
		{Name: "Token.create", Method: post, Path: "/tokens", Doc: "Creates an API token, optionally narrowed to permissions; the answer holds the token, once.",
			Input: obj(prop("name", str("")), prop("expires", str("e.g. 24h or 30d, at most 365 d")), prop("permissions", arr(str("Noun.verb scope"))),
				prop("tools", enum("what /mcp offers the token: search, fetch and do (code, the default) or one tool per verb (flat)", "code", "flat"))),
			Output: tokenOut},
		{Name: "Token.revoke", Method: del, Path: "/tokens/:token", Doc: "Revokes a token and the tokens made with it."},

		{Name: "Action.list", Method: get, Path: "/actions", Read: true, Doc: "Lists the Actions (every verb called, allowed or refused), newest first.",
			Input: pageIn(prop("verb", str("")), prop("by", str("")), prop("verdict", str("")), prop("before", str("an action id to start after")),
				prop("parent", str("only the calls the code-mode program of this Action id made"))), Output: list(actionOut)},
	}
	for i := range vs {
		finish(&vs[i])
	}
	return vs
}

// finish fills what follows from the rest: the permission is the verb's
// name, and each path parameter (":agent", "*" as "path") is a required
// string field of Input.
func finish(v *Verb) {
	if v.Permission == "" {
		v.Permission = v.Name
	}
	in := v.Input
	if in == nil {
		in = obj()
	}
	if in.Type != "object" {
		in = obj(req("body", in)) // never: declarations say objects
	}
	for _, p := range PathParams(v.Path) {
		if in.Properties == nil {
			in.Properties = map[string]*jsonschema.Schema{}
		}
		if _, ok := in.Properties[p]; !ok {
			in.Properties[p] = &jsonschema.Schema{Type: "string", Description: paramDoc(p), MinLength: ptr(1)}
		}
		if !contains(in.Required, p) {
			in.Required = append([]string{p}, in.Required...)
		}
	}
	v.Input = in
	if v.Output != nil {
		v.Output = v.Output.CloneSchemas() // a tree of its own: shapes are shared
	}
}

// PathParams names a path's parameters in order; the wildcard "*" is "path".
func PathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		switch {
		case seg == "*":
			out = append(out, "path")
		case strings.HasPrefix(seg, ":"):
			out = append(out, seg[1:])
		}
	}
	return out
}

// FillPath is path with its parameters filled in from value, each escaped;
// the wildcard "*" is "path", a relative path whose slashes are kept. It
// says which parameter value had none for, if one had none. The CLI and
// code mode build a verb's request with it.
func FillPath(path string, value func(name string) (string, bool)) (filled, missing string) {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		switch {
		case seg == "*":
			v, ok := value("path")
			if !ok {
				return "", "path"
			}
			names := strings.Split(v, "/")
			for j, n := range names {
				names[j] = url.PathEscape(n)
			}
			segs[i] = strings.Join(names, "/")
		case strings.HasPrefix(seg, ":"):
			v, ok := value(seg[1:])
			if !ok {
				return "", seg[1:]
			}
			segs[i] = url.PathEscape(v)
		}
	}
	return strings.Join(segs, "/"), ""
}

func paramDoc(p string) string {
	switch p {
	case "path":
		return "the file's path, relative, /-separated"
	case "name":
		return "the function package's name"
	case "version":
		return "the version's id"
	case "agent":
		// Agents are looked up by id alone (runtime.loadAgent): a name answers 404.
		return "the agent's id (ag_…)"
	case "port":
		return "the port inside the sandbox, 1 to 65535"
	}
	return "the " + strings.ReplaceAll(p, "_", " ") + "'s id (or name where it has one)"
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
