// Package handlers adapts HTTP to the runtime: each handler binds its input,
// calls one runtime verb with the request's Principal, and renders HTML, an htmx
// fragment or JSON. Handlers hold no permission or policy rules; those are the
// runtime's.
package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/layout"
)

// Handlers holds what every handler needs.
type Handlers struct {
	RT      *runtime.Runtime
	Cookies sessions.Store
	// BaseURL is the console's public address, for one-time links.
	BaseURL string
	Log     *slog.Logger
	// RevealFor and RevealMax bound the secrets a creating form leaves for
	// the page it redirects to (reveal.go); zero takes the defaults.
	RevealFor time.Duration
	RevealMax int

	revealed reveals // secrets a creating POST shows once, after its redirect
}

const (
	cookieName   = "subako"
	principalKey = "principal"
	webSIDKey    = "web_session"
)

// principal is who the request acts as; middleware set it.
func principal(c echo.Context) runtime.Principal {
	if p, ok := c.Get(principalKey).(runtime.Principal); ok {
		return p
	}
	return runtime.Anonymous
}

func ctx(c echo.Context) context.Context { return c.Request().Context() }

// render writes a templ component as the response: the one render helper.
func render(c echo.Context, status int, t templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return t.Render(ctx(c), c.Response())
}

func isHTMX(c echo.Context) bool { return c.Request().Header.Get("HX-Request") == "true" }

// shell is the frame of a signed-in page: who, where, and pending flashes.
func (h *Handlers) shell(c echo.Context, title, section string) layout.Shell {
	p := principal(c)
	pending := h.RT.PendingApprovals(ctx(c), p)
	return layout.Shell{Title: title, Section: section, Email: p.Label, Access: p.Access, Flashes: h.takeFlashes(c),
		Pending: pending, PendingEvents: pendingEvents(c, p, pending), Can: p.Can}
}

func (h *Handlers) session(c echo.Context) *sessions.Session {
	s, _ := h.Cookies.Get(c.Request(), cookieName)
	return s
}

// saveSession writes the cookie with the flags every Subako cookie carries.
func (h *Handlers) saveSession(c echo.Context, s *sessions.Session, maxAge int) error {
	s.Options = &sessions.Options{Path: "/", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: c.Scheme() == "https"}
	return s.Save(c.Request(), c.Response())
}

const sessionMaxAge = int(7 * 24 * time.Hour / time.Second)

// flash queues a message for the next page this browser renders.
func (h *Handlers) flash(c echo.Context, kind, text string) {
	s := h.session(c)
	s.AddFlash(kind + "\x00" + text)
	_ = h.saveSession(c, s, sessionMaxAge)
}

func (h *Handlers) takeFlashes(c echo.Context) []layout.Flash {
	s := h.session(c)
	raw := s.Flashes()
	if len(raw) == 0 {
		return nil
	}
	_ = h.saveSession(c, s, sessionMaxAge)
	var out []layout.Flash
	for _, r := range raw {
		str, _ := r.(string)
		for i := 0; i < len(str); i++ {
			if str[i] == 0 {
				out = append(out, layout.Flash{Kind: str[:i], Text: str[i+1:]})
				break
			}
		}
	}
	return out
}

// redirect answers a form post: htmx follows HX-Redirect, browsers a 303.
func redirect(c echo.Context, to string) error {
	if isHTMX(c) {
		c.Response().Header().Set("HX-Redirect", to)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, to)
}
