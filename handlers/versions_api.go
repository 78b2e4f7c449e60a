package handlers

import (
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// APIVersionList is Version.list.
func (h *Handlers) APIVersionList(c echo.Context) error {
	out, err := h.RT.VersionList(ctx(c), principal(c), c.Param("agent"))
	return answer(c, http.StatusOK, out, err)
}

// APIVersionCreate is Version.create: body {"config": {...}} or {"from": "VERSION_ID"}.
func (h *Handlers) APIVersionCreate(c echo.Context) error {
	var in runtime.VersionCreateInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Agent = c.Param("agent")
	out, err := h.RT.VersionCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APIVersionGet is Version.get.
func (h *Handlers) APIVersionGet(c echo.Context) error {
	out, err := h.RT.VersionGet(ctx(c), principal(c), c.Param("version"))
	return answer(c, http.StatusOK, out, err)
}

// APIVersionUpdate is Version.update: the body is the agent config itself.
func (h *Handlers) APIVersionUpdate(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxConfigBytes+1))
	if err != nil {
		return err
	}
	out, err := h.RT.VersionUpdate(ctx(c), principal(c), c.Param("version"), body)
	return answer(c, http.StatusOK, out, err)
}

const maxConfigBytes = 1 << 20

// APIVersionPublish is Version.publish.
func (h *Handlers) APIVersionPublish(c echo.Context) error {
	out, err := h.RT.VersionPublish(ctx(c), principal(c), c.Param("version"))
	return answer(c, http.StatusOK, out, err)
}

// APIVersionTools is Version.tools.
func (h *Handlers) APIVersionTools(c echo.Context) error {
	out, err := h.RT.VersionTools(ctx(c), principal(c), c.Param("version"))
	return answer(c, http.StatusOK, out, err)
}

// APIVersionDiff is Version.diff.
func (h *Handlers) APIVersionDiff(c echo.Context) error {
	out, err := h.RT.VersionDiff(ctx(c), principal(c), c.Param("version"), c.QueryParam("against"))
	return answer(c, http.StatusOK, out, err)
}
