package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// readyz answers /readyz with each part's state (the database, events
// across replicas, the sandbox driver, the archive store …) as JSON: 200
// when every part is ready, 503 when one fails. Not just a ping: a database
// that answers but cannot write (a full disk) would fail every verb and
// lose its Actions.
func readyz(rt *runtime.Runtime) echo.HandlerFunc {
	return func(c echo.Context) error {
		rep := rt.ReadyParts(c.Request().Context())
		status := http.StatusOK
		if !rep.Ready {
			status = http.StatusServiceUnavailable
		}
		c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
		return c.JSON(status, rep)
	}
}
