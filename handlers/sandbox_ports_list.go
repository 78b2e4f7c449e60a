package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// APISandboxPorts is Sandbox.ports: the ports listening inside a running
// sandbox, [{port, address}].
func (h *Handlers) APISandboxPorts(c echo.Context) error {
	out, err := h.RT.SandboxPortList(ctx(c), principal(c), c.Param("sandbox"))
	return answer(c, http.StatusOK, out, err)
}
