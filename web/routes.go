package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/static"
)

// APIRoute is one verb of the JSON API: its name, method and path under /api/v1.
type APIRoute struct {
	Verb    string
	Method  string
	Path    string
	Handler echo.HandlerFunc
}

// WholeBody reports whether the verb's JSON body is one value (Version.update's
// agent config) rather than an object of fields; `subako do` takes it as "body".
func (r APIRoute) WholeBody() bool { return r.Verb == "Version.update" }

// RawBody reports whether the verb's body is a file sent as is (Archive.upload's
// .tar.gz); `subako do` sends it from --body-file.
func (r APIRoute) RawBody() bool {
	return r.Verb == "Archive.upload" || r.Verb == "Volume.put" || r.Verb == "Sandbox.writeFile"
}

// apiRoutes is the JSON API, verb by verb, in API.md's order.
func apiRoutes(h *handlers.Handlers) []APIRoute {
	return []APIRoute{
		{"Agent.list", http.MethodGet, "/agents", h.APIAgentList},
		{"Agent.create", http.MethodPost, "/agents", h.APIAgentCreate},
		{"Agent.get", http.MethodGet, "/agents/:agent", h.APIAgentGet},
		{"Agent.update", http.MethodPatch, "/agents/:agent", h.APIAgentUpdate},
		{"Agent.delete", http.MethodDelete, "/agents/:agent", h.APIAgentDelete},
		{"Version.list", http.MethodGet, "/agents/:agent/versions", h.APIVersionList},
		{"Version.create", http.MethodPost, "/agents/:agent/versions", h.APIVersionCreate},
		{"Version.get", http.MethodGet, "/versions/:version", h.APIVersionGet},
		{"Version.update", http.MethodPut, "/versions/:version/config", h.APIVersionUpdate},
		{"Version.publish", http.MethodPost, "/versions/:version/publish", h.APIVersionPublish},
		{"Version.tools", http.MethodGet, "/versions/:version/tools", h.APIVersionTools},
		{"Version.diff", http.MethodGet, "/versions/:version/diff", h.APIVersionDiff},
		{"Version.fetchTools", http.MethodPost, "/versions/:version/tools/fetch", h.APIVersionFetchTools},
		{"Version.drift", http.MethodGet, "/versions/:version/drift", h.APIVersionDrift},
		{"Skill.list", http.MethodGet, "/skills", h.APISkillList},
		{"Skill.create", http.MethodPost, "/skills", h.APISkillCreate},
		{"Skill.get", http.MethodGet, "/skills/:skill", h.APISkillGet},
		{"Skill.delete", http.MethodDelete, "/skills/:skill", h.APISkillDelete},
		{"Function.list", http.MethodGet, "/functions", h.APIFunctionList},
		{"Function.install", http.MethodPost, "/functions", h.APIFunctionInstall},
		{"Function.get", http.MethodGet, "/functions/:name/:version", h.APIFunctionGet},
		{"Vault.list", http.MethodGet, "/vaults", h.APIVaultList},
		{"Vault.create", http.MethodPost, "/vaults", h.APIVaultCreate},
		{"Vault.get", http.MethodGet, "/vaults/:vault", h.APIVaultGet},
		{"Vault.delete", http.MethodDelete, "/vaults/:vault", h.APIVaultDelete},
		{"Credential.list", http.MethodGet, "/vaults/:vault/credentials", h.APICredentialList},
		{"Credential.set", http.MethodPut, "/vaults/:vault/credentials", h.APICredentialSet},
		{"Credential.delete", http.MethodDelete, "/vaults/:vault/credentials/:credential", h.APICredentialDelete},
		{"Session.list", http.MethodGet, "/sessions", h.APISessionList},
		{"Session.create", http.MethodPost, "/sessions", h.APISessionCreate},
		{"Session.get", http.MethodGet, "/sessions/:session", h.APISessionGet},
		{"Session.end", http.MethodPost, "/sessions/:session/end", h.APISessionEnd},
		{"Session.tools", http.MethodGet, "/sessions/:session/tools", h.APISessionTools},
		{"ToolCall.create", http.MethodPost, "/sessions/:session/tool_calls", h.APIToolCallCreate},
		{"ToolCall.get", http.MethodGet, "/tool_calls/:call", h.APIToolCallGet},
		{"ToolCall.list", http.MethodGet, "/sessions/:session/tool_calls", h.APIToolCallList},
		{"ToolCall.complete", http.MethodPost, "/tool_calls/:call/result", h.APIToolCallComplete},
		{"ToolCall.cancel", http.MethodPost, "/tool_calls/:call/cancel", h.APIToolCallCancel},
		{"SessionRule.list", http.MethodGet, "/sessions/:session/rules", h.APISessionRuleList},
		{"SessionRule.revoke", http.MethodDelete, "/sessions/:session/rules/:rule", h.APISessionRuleRevoke},
		{"Client.connect", http.MethodPut, "/sessions/:session/clients/:client", h.APIClientConnect},
		{"ClientCall.next", http.MethodGet, "/sessions/:session/clients/:client/calls", h.APIClientCallNext},
		{"Volume.list", http.MethodGet, "/sessions/:session/volume", h.APIVolumeList},
		{"Volume.get", http.MethodGet, "/sessions/:session/volume/*", h.APIVolumeGet},
		{"Volume.put", http.MethodPut, "/sessions/:session/volume/*", h.APIVolumePut},
		{"Volume.delete", http.MethodDelete, "/sessions/:session/volume/*", h.APIVolumeDelete},
		{"Approval.list", http.MethodGet, "/approvals", h.APIApprovalList},
		{"Approval.approve", http.MethodPost, "/approvals/:approval/approve", h.APIApprovalApprove},
		{"Approval.deny", http.MethodPost, "/approvals/:approval/deny", h.APIApprovalDeny},
		{"Channel.list", http.MethodGet, "/channels", h.APIChannelList},
		{"Channel.create", http.MethodPost, "/channels", h.APIChannelCreate},
		{"Channel.update", http.MethodPatch, "/channels/:channel", h.APIChannelUpdate},
		{"Channel.delete", http.MethodDelete, "/channels/:channel", h.APIChannelDelete},
		{"Notification.list", http.MethodGet, "/notifications", h.APINotificationList},
		{"Subscription.get", http.MethodGet, "/subscription", h.APISubscriptionGet},
		{"Subscription.update", http.MethodPut, "/subscription", h.APISubscriptionUpdate},
		{"Sandbox.list", http.MethodGet, "/sandboxes", h.APISandboxList},
		{"Sandbox.get", http.MethodGet, "/sandboxes/:sandbox", h.APISandboxGet},
		{"Archive.download", http.MethodGet, "/sandboxes/:sandbox/archive", h.DownloadArchive},
		{"Archive.delete", http.MethodDelete, "/sandboxes/:sandbox/archive", h.APIArchiveDelete},
		{"Archive.upload", http.MethodPut, "/sandboxes/:sandbox/archive", h.APIArchiveUpload},
		{"Sandbox.files", http.MethodGet, "/sandboxes/:sandbox/files", h.APISandboxFiles},
		{"Sandbox.readFile", http.MethodGet, "/sandboxes/:sandbox/files/*", h.SandboxFileGet},
		{"Sandbox.writeFile", http.MethodPut, "/sandboxes/:sandbox/files/*", h.APISandboxFilePut},
		{"Sandbox.ports", http.MethodGet, "/sandboxes/:sandbox/ports", h.APISandboxPorts},
		{"Sandbox.port", http.MethodPost, "/sandboxes/:sandbox/ports/:port", h.APIOpenPort},
		{"Usage.get", http.MethodGet, "/usage", h.APIUsageGet},
		{"User.list", http.MethodGet, "/users", h.APIUserList},
		{"User.invite", http.MethodPost, "/users", h.APIUserInvite},
		{"User.update", http.MethodPatch, "/users/:user", h.APIUserUpdate},
		{"User.remove", http.MethodDelete, "/users/:user", h.APIUserRemove},
		{"User.revoke_invite", http.MethodDelete, "/invites/:invite", h.APIUserRevokeInvite},
		{"Tenant.list", http.MethodGet, "/tenants", h.APITenantList},
		{"Tenant.create", http.MethodPost, "/tenants", h.APITenantCreate},
		{"Tenant.get", http.MethodGet, "/tenants/:tenant", h.APITenantGet},
		{"Tenant.update", http.MethodPatch, "/tenants/:tenant", h.APITenantUpdate},
		{"Tenant.delete", http.MethodDelete, "/tenants/:tenant", h.APITenantDelete},
		{"Role.list", http.MethodGet, "/roles", h.APIRoleList},
		{"Role.create", http.MethodPost, "/roles", h.APIRoleCreate},
		{"Role.get", http.MethodGet, "/roles/:role", h.APIRoleGet},
		{"Role.update", http.MethodPatch, "/roles/:role", h.APIRoleUpdate},
		{"Role.delete", http.MethodDelete, "/roles/:role", h.APIRoleDelete},
		{"Seat.list", http.MethodGet, "/seats", h.APISeatList},
		{"Seat.create", http.MethodPost, "/seats", h.APISeatCreate},
		{"Seat.delete", http.MethodDelete, "/seats/:seat", h.APISeatDelete},
		{"Change.list", http.MethodGet, "/changes", h.APIChangeList},
		{"Change.undo", http.MethodPost, "/changes/:change/undo", h.APIChangeUndo},
		{"Token.list", http.MethodGet, "/tokens", h.APITokenList},
		{"Token.create", http.MethodPost, "/tokens", h.APITokenCreate},
		{"Token.revoke", http.MethodDelete, "/tokens/:token", h.APITokenRevoke},
		{"Action.list", http.MethodGet, "/actions", h.APIActionList},
	}
}

// APIVerbs lists every API verb with its route, for `subako do`.
func APIVerbs() []APIRoute { return apiRoutes(&handlers.Handlers{}) }

func routes(e *echo.Echo, h *handlers.Handlers, rt *runtime.Runtime) {
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", func(c echo.Context) error {
		// Not just a ping: a database that answers but cannot write (a full
		// disk) would fail every verb and lose its Actions.
		if err := rt.Ready(c.Request().Context()); err != nil {
			return c.String(http.StatusServiceUnavailable, "database cannot write\n")
		}
		return c.String(http.StatusOK, "ready\n")
	})
	e.GET("/static/*", staticFiles())

	e.GET("/login", h.LoginPage)
	e.POST("/login", h.Login)
	e.GET("/setup/:token", h.AcceptPage)
	e.POST("/setup/:token", h.Accept)
	e.GET("/invite/:token", h.AcceptPage)
	e.POST("/invite/:token", h.Accept)

	con := e.Group("", h.RequireUser)
	con.GET("/", h.Dashboard)
	con.POST("/logout", h.Logout)
	con.POST("/example", h.LoadExample)
	con.GET("/agents", h.Agents)
	con.POST("/agents", h.CreateAgent)
	con.GET("/agents/:agent", h.Agent)
	con.POST("/agents/:agent", h.UpdateAgent)
	con.POST("/agents/:agent/delete", h.DeleteAgent)
	con.POST("/agents/:agent/versions", h.CreateVersion)
	con.GET("/versions/:version", h.Version)
	con.POST("/versions/:version/publish", h.PublishVersion)
	con.GET("/versions/:version/export", h.ExportVersion)
	con.POST("/versions/:version/import", h.ImportVersion)
	con.GET("/versions/:version/diff", h.DiffVersion)
	con.GET("/versions/:version/grants/:kind/new", h.NewGrant)
	con.POST("/versions/:version/grants/:kind", h.SaveGrant)
	con.POST("/versions/:version/check-name/:kind", h.CheckGrantName)
	con.GET("/versions/:version/grants/:kind/:name/edit", h.EditGrant)
	con.POST("/versions/:version/grants/:kind/:name", h.SaveGrant)
	con.POST("/versions/:version/grants/:kind/:name/remove", h.RemoveGrant)
	con.POST("/versions/:version/fetch-tools/:kind", h.FetchGrantTools)
	con.POST("/versions/:version/fetch-tools/:kind/:name", h.FetchGrantTools)
	con.POST("/versions/:version/tools/fetch", h.FetchVersionTools)
	con.POST("/versions/:version/draft-with-tools", h.DraftWithTools)
	con.GET("/skills", h.Skills)
	con.POST("/skills", h.CreateSkill)
	con.GET("/skills/:skill", h.Skill)
	con.GET("/skills/:skill/files/*", h.SkillFile)
	con.POST("/skills/:skill/delete", h.DeleteSkill)
	con.GET("/people", h.People)
	con.POST("/people/invite", h.Invite)
	con.POST("/people/:user/access", h.ChangeAccess)
	con.POST("/people/:user/remove", h.RemovePerson)
	con.POST("/people/invites/:invite/revoke", h.RevokeInvite)
	con.GET("/tenants", h.Tenants)
	con.POST("/tenants", h.CreateTenant)
	con.POST("/tenants/:tenant", h.UpdateTenant)
	con.POST("/tenants/:tenant/delete", h.DeleteTenant)
	con.POST("/people/:user/seats", h.SeatPerson)
	con.POST("/seats/:seat/delete", h.UnseatPerson)
	con.GET("/roles", h.Roles)
	con.POST("/roles", h.CreateRole)
	con.GET("/roles/:role", h.Role)
	con.POST("/roles/:role", h.UpdateRole)
	con.POST("/roles/:role/permissions", h.AddRolePermissions)
	con.POST("/roles/:role/permissions/:permission/remove", h.RemoveRolePermission)
	con.POST("/roles/:role/seats", h.SeatPerson)
	con.POST("/roles/:role/delete", h.DeleteRole)
	con.GET("/changes", h.Changes)
	con.POST("/changes/:change/undo", h.UndoChange)
	con.GET("/tokens", h.Tokens)
	con.POST("/tokens", h.CreateToken)
	con.POST("/tokens/:token/revoke", h.RevokeToken)
	con.GET("/audit", h.Audit)
	con.GET("/sessions", h.Sessions)
	con.POST("/sessions", h.CreateSession)
	con.GET("/sessions/:session", h.Session)
	con.GET("/sessions/:session/events", h.SessionEvents)
	con.POST("/sessions/:session/try", h.TryTool)
	con.GET("/sessions/:session/calls/:call/try", h.TryResult)
	con.POST("/sessions/:session/tools/refresh", h.RefreshSessionTools)
	con.GET("/sessions/:session/tools/schema", h.SessionToolSchema)
	con.POST("/sessions/:session/end", h.EndSession)
	con.POST("/sessions/:session/calls/:call/answer", h.AnswerQuestion)
	con.POST("/sessions/:session/rules/:rule/revoke", h.RevokeSessionRule)
	con.GET("/sessions/:session/files", h.SessionFiles)
	con.GET("/sessions/:session/files/events", h.SessionFilesEvents)
	con.GET("/sessions/:session/file/*", h.VolumeFile)
	con.POST("/sessions/:session/files", h.UploadVolumeFile)
	con.POST("/sessions/:session/files/delete", h.DeleteVolumeFile)
	con.POST("/approvals/:approval/approve", h.Approve)
	con.POST("/approvals/:approval/deny", h.Deny)
	con.GET("/approvals", h.Approvals)
	con.GET("/approvals/history", h.ApprovalHistory)
	con.GET("/approvals/events", h.ApprovalEvents)
	con.GET("/approvals/pending/events", h.PendingEvents)
	con.GET("/approvals/:approval", h.ApprovalLink)
	con.GET("/notifications", h.Notifications)
	con.POST("/notifications/subscription", h.SaveSubscription)
	con.POST("/notifications/channels", h.CreateChannel)
	con.POST("/notifications/channels/:channel", h.UpdateChannel)
	con.POST("/notifications/channels/:channel/rotate", h.RotateChannelSecret)
	con.POST("/notifications/channels/:channel/delete", h.DeleteChannel)
	con.GET("/sandboxes", h.Sandboxes)
	con.GET("/sandboxes/events", h.SandboxEvents)
	con.GET("/sessions/:session/sandboxes", h.SessionSandboxes)
	con.GET("/sandboxes/:sandbox/archive", h.DownloadArchive)
	con.POST("/sandboxes/:sandbox/archive/delete", h.DeleteArchive)
	con.POST("/sandboxes/:sandbox/archive/upload", h.UploadArchive)
	con.GET("/sandboxes/:sandbox/file/*", h.SandboxFileGet)
	con.POST("/sandboxes/:sandbox/files/upload", h.UploadSandboxFile)
	con.GET("/sandboxes/:sandbox/ports/:port", h.OpenPort)
	con.GET("/sandboxes/:sandbox/ports/:port/*", h.OpenPort)
	con.GET("/functions", h.Functions)
	con.POST("/functions", h.InstallFunction)
	con.GET("/functions/:name/:version", h.Function)
	con.GET("/vaults", h.Vaults)
	con.POST("/vaults", h.CreateVault)
	con.GET("/vaults/:vault", h.Vault)
	con.POST("/vaults/:vault/credentials", h.SetCredential)
	con.POST("/vaults/:vault/credentials/:credential/delete", h.DeleteCredential)
	con.POST("/vaults/:vault/delete", h.DeleteVault)
	con.POST("/vaults/:vault/oauth/connect", h.ConnectOAuth)
	// OAuth's redirect back is a GET that finishes a connection; its state is
	// single-use and bound to the browser's session (runtime/vault_oauth_connect.go).
	con.GET("/vaults/oauth/callback", h.OAuthCallback)
	con.GET("/usage", h.Usage)
	con.GET("/usage.csv", h.UsageCSV)

	// No OAuth metadata: 404 rather than the console's sign-in redirect
	// (handlers/mcp_protocol.go).
	e.Any("/.well-known/*", h.WellKnown)
	// A port's preview: its ticket is the credential, never the cookie
	// (handlers/sandbox_ports.go).
	e.Any("/sandbox-preview/:ticket", h.PreviewPort)
	e.Any("/sandbox-preview/:ticket/*", h.PreviewPort)
	mcpEndpoint := handlers.NewMCP(h)
	e.Any("/mcp/sessions/:session", mcpEndpoint.Serve, h.RequireBearer)

	api := e.Group("/api/v1", h.RequireBearer)
	for _, r := range apiRoutes(h) {
		api.Add(r.Method, r.Path, r.Handler)
	}
}

// staticFiles serves embedded assets; their URLs carry a checksum, so browsers
// may keep them forever.
func staticFiles() echo.HandlerFunc {
	fileServer := http.StripPrefix("/static/", http.FileServerFS(static.FS))
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		fileServer.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
