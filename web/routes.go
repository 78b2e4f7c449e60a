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

// apiRoutes is the JSON API, verb by verb, in API.md's order.
func apiRoutes(h *handlers.Handlers) []APIRoute {
	return []APIRoute{
		{"Agent.list", http.MethodGet, "/agents", h.APIAgentList},
		{"Agent.create", http.MethodPost, "/agents", h.APIAgentCreate},
		{"Agent.get", http.MethodGet, "/agents/:agent", h.APIAgentGet},
		{"Agent.update", http.MethodPatch, "/agents/:agent", h.APIAgentUpdate},
		{"Agent.delete", http.MethodDelete, "/agents/:agent", h.APIAgentDelete},
		{"User.list", http.MethodGet, "/users", h.APIUserList},
		{"User.invite", http.MethodPost, "/users", h.APIUserInvite},
		{"User.update", http.MethodPatch, "/users/:user", h.APIUserUpdate},
		{"User.remove", http.MethodDelete, "/users/:user", h.APIUserRemove},
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
		sqlDB, err := rt.DB().DB.DB()
		if err == nil {
			err = sqlDB.PingContext(c.Request().Context())
		}
		if err != nil {
			return c.String(http.StatusServiceUnavailable, "database unreachable\n")
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
	con.GET("/agents", h.Agents)
	con.POST("/agents", h.CreateAgent)
	con.GET("/people", h.People)
	con.POST("/people/invite", h.Invite)
	con.POST("/people/:user/access", h.ChangeAccess)
	con.POST("/people/:user/remove", h.RemovePerson)
	con.GET("/tokens", h.Tokens)
	con.POST("/tokens", h.CreateToken)
	con.POST("/tokens/:token/revoke", h.RevokeToken)
	con.GET("/audit", h.Audit)
	con.GET("/sessions", h.Placeholder("sessions", "Sessions", "A session runs a published version with vaults of credentials.", "Sessions arrive with the sessions capability."))
	con.GET("/approvals", h.Placeholder("approvals", "Approvals", "Ask-first calls wait here for a decision.", "No calls are waiting."))
	con.GET("/sandboxes", h.Placeholder("sandboxes", "Sandboxes", "Each session's own Linux machines.", "No sandboxes have started."))
	con.GET("/functions", h.Placeholder("functions", "Functions", "WebAssembly packages agents call in a fresh sandbox per call.", "No function packages are installed."))
	con.GET("/vaults", h.Placeholder("vaults", "Vaults", "Credentials the runtime attaches to outgoing calls.", "No vaults yet."))
	con.GET("/usage", h.Placeholder("usage", "Usage", "Machine time, function time and archive storage.", "No usage recorded yet."))

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
