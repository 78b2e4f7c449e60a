package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// SessionTypesFile answers GET /api/v1/sessions/{session}/$.d.ts: the
// TypeScript declarations of the session's $, its offered tools by kind and
// grant ($.mcp.everything.echo), typed from their input and output schemas,
// what code mode's fetch gives its agent. Denied tools are absent. It reads
// Session.tools (the same check and record): the session's own token, or a
// person who may read the session.
func (h *Handlers) SessionTypesFile(c echo.Context) error {
	sc, err := h.RT.SessionCodeTools(ctx(c), principal(c), c.Param("session"))
	if err != nil {
		return err
	}
	body := []byte(runtime.CodeTypes(sc.Tools))
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	hdr := c.Response().Header()
	// Cut to the session's tools as they stand: never shared, asked again
	// each time (304 while they did not change).
	hdr.Set("Cache-Control", "private, no-cache")
	hdr.Set("ETag", etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	if match := c.Request().Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, "application/typescript; charset=utf-8", body)
}
