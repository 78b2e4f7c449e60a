package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/verbs"
	"github.com/subako/subako/static"
)

// APIRoute is one verb of the JSON API: its name, canonical method and path
// under /api/v1 (the registry's, runtime/verbs), older paths kept as aliases.
type APIRoute struct {
	Verb    string
	Method  string
	Path    string
	Handler echo.HandlerFunc
	Aliases []string
}

// WholeBody reports whether the verb's JSON body is one value (Version.update's
// agent config) rather than an object of fields; `subako do` takes it as "body".
func (r APIRoute) WholeBody() bool { v, _ := verbs.Get(r.Verb); return v.Body == verbs.BodyWhole }

// RawBody reports whether the verb's body is a file sent as is (Archive.upload's
// .tar.gz); `subako do` sends it from --body-file.
func (r APIRoute) RawBody() bool { v, _ := verbs.Get(r.Verb); return v.Body == verbs.BodyRaw }

// apiRoutes is the JSON API, verb by verb, in API.md's order: the registry's
// routes, each bound to its handler by the verb's name (api_handlers.go).
func apiRoutes(h *handlers.Handlers) []APIRoute {
	hs := apiHandlers(h)
	var out []APIRoute
	for _, v := range verbs.All() {
		out = append(out, APIRoute{Verb: v.Name, Method: v.Method, Path: v.Path, Handler: hs[v.Name], Aliases: v.Aliases})
	}
	return out
}

// APIVerbs lists every API verb with its route, for `subako do`.
func APIVerbs() []APIRoute { return apiRoutes(&handlers.Handlers{}) }

func routes(e *echo.Echo, h *handlers.Handlers, rt *runtime.Runtime) {
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", readyz(rt)) // readyz.go: each part's state as JSON
	e.GET("/static/*", staticFiles())

	e.GET("/login", h.LoginPage)
	e.POST("/login", h.Login)
	e.GET("/setup/:token", h.AcceptPage)
	e.POST("/setup/:token", h.Accept)
	e.GET("/invite/:token", h.AcceptPage)
	e.POST("/invite/:token", h.Accept)

	con := e.Group("", h.RequireUser, handlers.ConsoleCaller)
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
	con.POST("/versions/:version/tools-as", h.SetToolsAs)
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
	// People's code mode (search, fetch, do; or flat): its verbs are served
	// by this router's own API routes (handlers/mcp_code.go).
	e.Any("/mcp", handlers.NewCodeMode(h, e, verbs.All).Serve, h.RequireBearer)

	// The API's own description, from the registry; public, as docs/api.md is.
	e.GET("/api/v1/openapi.json", openAPI)
	// A session's $ as TypeScript (code mode, handlers/session_types.go):
	// read through Session.tools, beside the registry's verbs.
	e.GET("/api/v1/sessions/:session/$.d.ts", h.SessionTypesFile, h.RequireBearer)
	// The typed client $, cut to the caller's verbs (handlers/sdk.go, docs/sdk.md):
	// files, not verbs; a bearer token or, without one, the console's cookie.
	e.GET("/api/v1/$.d.ts", h.ClientTypesFile, h.RequireBearerOrUser)
	e.GET("/api/v1/$.js", h.ClientScriptFile, h.RequireBearerOrUser)
	api := e.Group("/api/v1", h.RequireBearer, handlers.APICaller)
	for _, r := range apiRoutes(h) {
		for _, p := range append([]string{r.Path}, r.Aliases...) {
			api.Add(r.Method, p, r.Handler)
		}
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
