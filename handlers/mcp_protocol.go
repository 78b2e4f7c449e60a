package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WellKnown answers every /.well-known/ path (OAuth protected-resource
// metadata, RFC 9728, and authorization-server metadata, RFC 8414, among
// them) with 404 problem JSON. The MCP endpoint takes Subako's own bearer
// tokens and is no OAuth resource: an MCP client that probes these paths must
// learn there is no metadata, not be sent to the console's sign-in page, which
// would start an OAuth flow that cannot finish.
func (h *Handlers) WellKnown(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
	return c.JSON(http.StatusNotFound, Problem{Type: "about:blank", Title: "Not found", Status: http.StatusNotFound, Code: "not_found",
		Detail: "Subako publishes no " + c.Request().URL.Path + ": the MCP endpoint takes a Subako bearer token (a session's token or an API token), not OAuth"})
}

// ModelMetaKey is the tools/call _meta key in which an MCP client may say
// which model asked for the call; ModelHeader is the HTTP header that says the
// same for every request it carries (the _meta key wins when both are sent).
const (
	ModelMetaKey = "subako/model"
	ModelHeader  = "Subako-Model"
)

// headerModel is the model named by a request's Subako-Model header, or "".
func headerModel(c echo.Context) string {
	return strings.TrimSpace(c.Request().Header.Get(ModelHeader))
}

// callModel is the model the client says made this call, or "".
func callModel(req *mcp.CallToolRequest) string {
	if req.Params != nil {
		if m, ok := req.Params.Meta[ModelMetaKey].(string); ok && strings.TrimSpace(m) != "" {
			return strings.TrimSpace(m)
		}
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		return strings.TrimSpace(extra.Header.Get(ModelHeader))
	}
	return ""
}

// callClient is the MCP client that made this call, as its initialize's
// clientInfo said: "name/version", or "" when it said nothing.
func callClient(req *mcp.CallToolRequest) string { return sessionClient(req.Session) }

// sessionClient is the MCP client of an MCP session, as callClient says it.
func sessionClient(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.ClientInfo == nil {
		return ""
	}
	name, version := strings.TrimSpace(ip.ClientInfo.Name), strings.TrimSpace(ip.ClientInfo.Version)
	switch {
	case name == "":
		return ""
	case version == "":
		return name
	}
	return name + "/" + version
}
