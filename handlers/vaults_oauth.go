package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// oauthCallbackPath is the one redirect URI Subako registers and sends: the
// console's base URL and this path, never anything a request chose.
const oauthCallbackPath = "/vaults/oauth/callback"

func (h *Handlers) oauthRedirectURI() string { return h.BaseURL + oauthCallbackPath }

// ConnectOAuth starts "Connect with OAuth" for a prefix of the vault and
// sends the browser to the authorization server. The client secret typed
// here is passed on and never rendered back.
func (h *Handlers) ConnectOAuth(c echo.Context) error {
	ref := c.Param("vault")
	sid, _ := c.Get(webSIDKey).(string)
	in := runtime.OAuthConnectInput{Vault: ref, Prefix: c.FormValue("prefix"), ClientID: c.FormValue("client_id"),
		ClientSecret: c.FormValue("client_secret"), Scopes: c.FormValue("scopes")}
	to, err := h.RT.OAuthConnectStart(ctx(c), principal(c), sid, h.oauthRedirectURI(), in)
	if e, ok := runtime.AsError(err); ok && (e.Kind == runtime.KindInvalid || e.Kind == runtime.KindConflict) {
		of := pages.OAuthForm{Prefix: in.Prefix, ClientID: in.ClientID, Scopes: in.Scopes}
		of.Errors, of.Error = fieldErrors(e)
		return h.vaultPageWith(c, statusOf(e.Kind), ref, pages.CredentialForm{}, of)
	}
	if err != nil {
		return h.flashError(c, err, "/vaults/"+ref)
	}
	// A full navigation even from htmx: the authorization server's page
	// must be the browser's, not a fragment.
	if isHTMX(c) {
		c.Response().Header().Set("HX-Redirect", to)
		return c.NoContent(http.StatusNoContent)
	}
	// Not a 303: the CSP's form-action 'self' would stop it (OAuthContinue).
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	return render(c, http.StatusOK, pages.OAuthContinue(to, issuerOf(to)))
}

// OAuthCallback is where the authorization server sends the browser back.
// It is a GET that changes data because OAuth's redirect is one; the
// state it carries is single-use and bound to this browser's session.
func (h *Handlers) OAuthCallback(c echo.Context) error {
	sid, _ := c.Get(webSIDKey).(string)
	q := c.QueryParams()
	done, err := h.RT.OAuthConnectFinish(ctx(c), principal(c), sid, q.Get("state"), q.Get("code"), q.Get("error"), q.Get("error_description"))
	back := "/vaults"
	if done.VaultID != "" {
		back = "/vaults/" + done.VaultID
	}
	if err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Connected "+done.Prefix+" with OAuth. Its tokens are stored sealed and refreshed by Subako.")
	return redirect(c, back)
}

// oauthRow adds an OAuth credential's state to its row on the vault page.
func oauthRow(row *pages.CredentialRow, cr runtime.CredentialView) {
	row.Status, row.StatusDetail, row.ClientID, row.Registration, row.Issuer, row.TokenURL, row.Scopes =
		cr.Status, cr.StatusDetail, cr.ClientID, cr.Registration, cr.Issuer, cr.TokenURL, cr.Scopes
	row.Expires = isoTimePtr(cr.ExpiresAt)
}

// needsReconnect is what the session page adds to a vault's name when an
// OAuth credential in it can no longer refresh.
func needsReconnect(v runtime.VaultView) string {
	var prefixes []string
	for _, cr := range v.Credentials {
		if cr.Status == runtime.CredentialNeedsReconnecting {
			prefixes = append(prefixes, cr.Prefix)
		}
	}
	if len(prefixes) == 0 {
		return ""
	}
	return " (needs reconnecting: " + strings.Join(prefixes, ", ") + ")"
}

// issuerOf is the authorization server's origin, for the continue page.
func issuerOf(authURL string) string {
	u, err := url.Parse(authURL)
	if err != nil {
		return "the authorization server"
	}
	return u.Scheme + "://" + u.Host
}
