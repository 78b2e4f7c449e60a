package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// RequireUser identifies the person behind a console request by the browser
// session in the cookie. It decides who, never what they may do.
func (h *Handlers) RequireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		sid, _ := h.session(c).Values[webSIDKey].(string)
		p, err := h.RT.AuthenticateSession(ctx(c), sid)
		if err != nil {
			return err
		}
		c.Set(principalKey, p)
		c.Set(webSIDKey, sid)
		return next(c)
	}
}

// RequireBearer identifies an API caller by its bearer token.
func (h *Handlers) RequireBearer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// The scheme is case-insensitive (RFC 9110 section 11.1): "bearer" is Bearer.
		scheme, token, _ := strings.Cut(strings.TrimSpace(c.Request().Header.Get(echo.HeaderAuthorization)), " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="subako"`)
			return runtime.ErrUnauthenticated
		}
		p, err := h.RT.Authenticate(ctx(c), strings.TrimSpace(token))
		if err != nil {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="subako", error="invalid_token"`)
			return err
		}
		c.Set(principalKey, p)
		return next(c)
	}
}
