package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// Problem is an RFC 9457 problem document with Subako's extensions.
type Problem struct {
	Type              string               `json:"type"`
	Title             string               `json:"title"`
	Status            int                  `json:"status"`
	Code              string               `json:"code,omitempty"`
	Detail            string               `json:"detail,omitempty"`
	Field             string               `json:"field,omitempty"`
	MissingPermission string               `json:"missing_permission,omitempty"`
	Errors            []runtime.FieldError `json:"errors,omitempty"`
}

func statusOf(k runtime.Kind) int {
	switch k {
	case runtime.KindInvalid:
		return http.StatusUnprocessableEntity
	case runtime.KindNotFound:
		return http.StatusNotFound
	case runtime.KindConflict:
		return http.StatusConflict
	case runtime.KindForbidden:
		return http.StatusForbidden
	case runtime.KindUnauthenticated:
		return http.StatusUnauthorized
	case runtime.KindTooMany:
		return http.StatusTooManyRequests
	case runtime.KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// problemOf turns any error into the problem a client is shown. Internal errors
// are reduced to a generic text: their detail goes to the log, not the caller.
func problemOf(err error) Problem {
	if e, ok := runtime.AsError(err); ok {
		return Problem{Type: "about:blank", Title: e.Title, Status: statusOf(e.Kind), Code: e.Code, Detail: e.Detail,
			Field: e.Field, MissingPermission: e.MissingPermission, Errors: e.Fields}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		return Problem{Type: "about:blank", Title: http.StatusText(he.Code), Status: he.Code, Code: codeOf(he.Code), Detail: msg}
	}
	return Problem{Type: "about:blank", Title: "Internal error", Status: 500, Code: "internal",
		Detail: "something went wrong on the server; it was logged"}
}

func codeOf(status int) string {
	return strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
}

// ErrorHandler is echo's one error handler: it logs once and renders problem
// JSON for the API, a fragment for htmx, or a whole page.
//
// An error that comes after the answer began (its status is sent) is only
// logged: the answer cannot be replaced, and the compress middleware cuts
// the connection so that the client does not take the part for the whole.
func (h *Handlers) ErrorHandler(err error, c echo.Context) {
	p := problemOf(err)
	log := h.Log.With("method", c.Request().Method, "route", c.Path(), "status", p.Status)
	if c.Response().Committed {
		log.Error("request failed after its answer began", "answer_status", c.Response().Status, "err", err)
		return
	}
	if e, ok := runtime.AsError(err); ok && e.RetryAfter > 0 {
		setRetryAfter(c, e.RetryAfter)
	}
	if p.Status >= 500 {
		log.Error("request failed", "err", err)
	} else {
		log.Warn("request refused", "code", p.Code, "detail", p.Detail)
	}
	path := c.Request().URL.Path
	switch {
	case strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/mcp/") || path == "/metrics":
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		_ = c.JSON(p.Status, p)
	case p.Status == http.StatusUnauthorized && (c.Request().Method == http.MethodGet || c.Request().Method == http.MethodHead):
		_ = c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
	case p.Status == http.StatusUnauthorized && isHTMX(c):
		c.Response().Header().Set("HX-Redirect", "/login")
		_ = c.NoContent(http.StatusUnauthorized)
	case isHTMX(c):
		c.Response().Header().Set("HX-Retarget", "#flash")
		c.Response().Header().Set("HX-Reswap", "innerHTML")
		_ = render(c, p.Status, pages.ErrorFragment(errorHelp(c, p)))
	case principal(c).Kind == runtime.PrincipalUser:
		help := errorHelp(c, p)
		_ = render(c, p.Status, pages.ErrorPage(h.shell(c, help.Title, ""), help))
	default:
		_ = render(c, p.Status, pages.BareError(errorHelp(c, p)))
	}
}

// formError is a runtime error that the form it came from can show beside
// its fields. A refusal is not: the form may be one the person is not even
// offered, so the error page says what permission is missing.
func formError(err error) (*runtime.Error, bool) {
	e, ok := runtime.AsError(err)
	if !ok {
		return nil, false
	}
	switch e.Kind {
	case runtime.KindInternal, runtime.KindForbidden, runtime.KindUnauthenticated:
		return nil, false
	}
	return e, true
}

// setRetryAfter says when to try again, in whole seconds rounded up: a
// client that waits exactly this long is let in.
func setRetryAfter(c echo.Context, d time.Duration) {
	c.Response().Header().Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
}
