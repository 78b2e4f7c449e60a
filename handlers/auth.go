package handlers

import (
	"net"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// LoginPage shows the sign-in form.
func (h *Handlers) LoginPage(c echo.Context) error {
	return render(c, http.StatusOK, pages.Login(pages.AuthForm{Next: safeNext(c.QueryParam("next")), NoOwner: h.RT.NeedsSetup(ctx(c))}))
}

// Login checks the password and starts a browser session.
func (h *Handlers) Login(c echo.Context) error {
	email, next := c.FormValue("email"), safeNext(c.FormValue("next"))
	sid, _, err := h.RT.Login(ctx(c), email, c.FormValue("password"), clientAddr(c))
	if e, ok := runtime.AsError(err); ok && (e.Kind == runtime.KindUnauthenticated || e.Kind == runtime.KindTooMany) {
		status := http.StatusUnauthorized
		if e.Kind == runtime.KindTooMany {
			status = http.StatusTooManyRequests
			setRetryAfter(c, e.RetryAfter)
		}
		return render(c, status, pages.Login(pages.AuthForm{Email: email, Error: e.Detail, Next: next}))
	}
	if err != nil {
		return err
	}
	s := h.session(c)
	s.Values[webSIDKey] = sid
	if err := h.saveSession(c, s, sessionMaxAge); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, next)
}

// Logout ends the browser session and clears the cookie.
func (h *Handlers) Logout(c echo.Context) error {
	sid, _ := c.Get(webSIDKey).(string)
	if err := h.RT.Logout(ctx(c), principal(c), sid); err != nil {
		return err
	}
	s := h.session(c)
	delete(s.Values, webSIDKey)
	if err := h.saveSession(c, s, -1); err != nil {
		return err
	}
	return redirect(c, "/login")
}

// safeNext keeps post-login redirects on this site: a path of this server,
// never another host. Browsers drop tabs and newlines from URLs and read a
// backslash as a slash, so "/\t/evil.com" or "/\\evil.com" would leave the site:
// any control character or backslash sends the person home instead.
func safeNext(n string) string {
	if !strings.HasPrefix(n, "/") || strings.HasPrefix(n, "//") || !utf8.ValidString(n) ||
		strings.ContainsFunc(n, func(r rune) bool { return r == '\\' || unicode.IsControl(r) }) {
		return "/"
	}
	return n
}

// clientAddr is the address the request came from, for throttling sign-ins.
// It is the connection's own: forwarding headers are set by the client and
// would let each attempt claim a new address.
func clientAddr(c echo.Context) string {
	host, _, err := net.SplitHostPort(c.Request().RemoteAddr)
	if err != nil {
		return c.Request().RemoteAddr
	}
	return host
}

// AcceptPage shows the form behind a one-time link (owner setup or invitation).
func (h *Handlers) AcceptPage(c echo.Context) error {
	inv, err := h.RT.LookupInvite(ctx(c), c.Param("token"))
	if err != nil {
		return render(c, http.StatusNotFound, pages.LinkInvalid())
	}
	return render(c, http.StatusOK, pages.Accept(h.acceptForm(c, inv, "", "")))
}

func (h *Handlers) acceptForm(c echo.Context, inv runtime.InviteView, email, msg string) pages.AuthForm {
	f := pages.AuthForm{Action: c.Request().URL.Path, Access: inv.Access, Setup: inv.Kind == runtime.InviteSetup, Error: msg, Email: email,
		Tenant: h.RT.InviteTenantName(ctx(c), inv)}
	if !f.Setup {
		f.Email = inv.Email
	}
	return f
}

// Accept creates the account and signs the new person in.
func (h *Handlers) Accept(c echo.Context) error {
	token := c.Param("token")
	inv, err := h.RT.LookupInvite(ctx(c), token)
	if err != nil {
		return render(c, http.StatusNotFound, pages.LinkInvalid())
	}
	in := runtime.AcceptInput{Token: token, Email: c.FormValue("email"), Name: c.FormValue("name"), Password: c.FormValue("password")}
	u, err := h.RT.AcceptInvite(ctx(c), in)
	if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindInvalid {
		return render(c, http.StatusUnprocessableEntity, pages.Accept(h.acceptForm(c, inv, in.Email, e.Error())))
	}
	if err != nil {
		return err
	}
	sid, _, err := h.RT.Login(ctx(c), u.Email, in.Password, clientAddr(c))
	if err != nil {
		return err
	}
	s := h.session(c)
	s.Values[webSIDKey] = sid
	s.AddFlash("ok\x00Welcome to Subako, " + u.Email + ".")
	if err := h.saveSession(c, s, sessionMaxAge); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/")
}
