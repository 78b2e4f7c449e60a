package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// APIToolCallCancel is ToolCall.cancel: POST /api/v1/tool_calls/:call/cancel
// with an optional {"reason": "…"}.
func (h *Handlers) APIToolCallCancel(c echo.Context) error {
	var in runtime.CancelInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.ToolCallCancel(ctx(c), principal(c), c.Param("call"), in.Reason)
	return answer(c, http.StatusOK, out, err)
}
