package web

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime/verbs"
)

// openAPIDoc is made once: the registry does not change while serving.
var openAPIDoc = sync.OnceValues(verbs.OpenAPI)

// openAPI serves GET /api/v1/openapi.json, the registry as OpenAPI 3.1.
func openAPI(c echo.Context) error {
	b, err := openAPIDoc()
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, "application/json", b)
}
