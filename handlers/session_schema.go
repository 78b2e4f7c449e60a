package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// SessionToolSchema is one offered tool's input schema, fetched when a
// person opens the tool on the session page: a session with hundreds of
// tools would otherwise send every schema with the page, twice.
func (h *Handlers) SessionToolSchema(c echo.Context) error {
	id, name := c.Param("session"), c.QueryParam("tool")
	rep, err := h.RT.SessionToolsReport(ctx(c), principal(c), id, false)
	if err != nil {
		return err
	}
	for _, t := range rep.Tools {
		if t.Name == name {
			return render(c, http.StatusOK, pages.SessionToolSchema(prettyJSON(t.InputSchema)))
		}
	}
	return &runtime.Error{Kind: runtime.KindNotFound, Code: "not_found", Title: "Not found",
		Detail: "session " + id + " offers no tool " + name, Field: "tool"}
}
