package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime/oauth/oauthtest"
)

// secureConfig grants the OAuth-protected MCP server.
const secureConfig = `{"mcp_servers": [{"name": "secure", "url": "MCP_URL", "default_policy": "allow"}]}`

// credentialStatus is the vault page's status text of its (only) OAuth credential.
func credentialStatus(page string) string {
	i := strings.Index(page, `data-testid="credential-status"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</")
	if j < 0 {
		return ""
	}
	return visibleText("<x " + page[i:i+j])
}

// An operator connects a vault to an OAuth-protected MCP server through
// Chromium (dynamic client registration, PKCE, consent), a session calls its
// tools; an expired access token is refreshed within one call (one Action);
// a revoked grant fails the call with credential_expired naming the vault and
// prefix and the vault and session pages say "needs reconnecting"; reconnecting
// makes the tools work again. No token, code, verifier or client secret shows
// up in a page, an answer, the log, the database or an export.
func TestOAuthConnectRefreshRevokeReconnect(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{})
	chrome := w.signIn(t)
	oauthMCPFlow(t, w, func() {
		chrome.connect("", "")
		if n := w.as.Stats().ConsentPagesShown; n != 1 {
			t.Fatalf("Chromium saw %d consent pages, want 1", n)
		}
	}, func() {
		chrome.run("reconnect",
			chromedp.Navigate(w.srv.URL+"/vaults/"+w.vault),
			chromedp.WaitVisible(css(`[data-testid=oauth-reconnect]`)),
			chromedp.Click(css(`[data-testid=oauth-reconnect]`)),
		)
		chrome.approve()
	})
}

// oauthMCPFlow is the connect, call, expire, revoke, reconnect story, with
// the connecting done by connect and reconnect.
func oauthMCPFlow(t *testing.T, w *oauthWorld, connect, reconnect func()) {
	version := w.publish(secureConfig)
	connect()

	st := w.as.Stats()
	if st.Registrations != 1 || st.CodeExchanges != 1 {
		t.Fatalf("the connection did not go through registration and one code exchange: %+v", st)
	}
	if st.LastResource != w.as.MCPURL {
		t.Errorf("the authorization request's resource parameter was %q, want the prefix %q", st.LastResource, w.as.MCPURL)
	}
	vaultPage := w.page("/vaults/" + w.vault)
	if got := credentialStatus(vaultPage); !strings.Contains(got, "connected") || strings.Contains(got, "reconnect") {
		t.Fatalf("after connecting the credential's status reads %q", got)
	}
	if !strings.Contains(vaultPage, w.as.MCPURL) {
		t.Fatalf("the vault page does not show the prefix %s", w.as.MCPURL)
	}

	s := w.newSession(version)
	c := w.callTool(s, "mcp__secure__whoami", map[string]any{})
	if c.Status != "succeeded" || !strings.Contains(string(c.Output), "alice") {
		t.Fatalf("whoami through the vault's OAuth credential: %+v %s", c, c.Output)
	}

	// The access token expires at the server: the next call is refreshed
	// once and succeeds, as one Action.
	w.as.ExpireAccessTokens()
	before, refreshes := w.actions(), w.as.Stats().Refreshes
	c = w.callTool(s, "mcp__secure__echo", map[string]any{"text": "after expiry"})
	if c.Status != "succeeded" || !strings.Contains(string(c.Output), "after expiry") {
		t.Fatalf("echo after the access token expired: %+v %s", c, c.Output)
	}
	if got := w.as.Stats().Refreshes - refreshes; got != 1 {
		t.Fatalf("the call refreshed %d times, want 1", got)
	}
	if n := w.actions() - before; n != 1 {
		t.Fatalf("the refreshed call left %d Actions, want 1", n)
	}
	// The rotated refresh token was kept: a second expiry refreshes again.
	w.as.ExpireAccessTokens()
	if c = w.callTool(s, "mcp__secure__echo", map[string]any{"text": "second expiry"}); c.Status != "succeeded" {
		t.Fatalf("echo after a second expiry (is the rotated refresh token kept?): %+v", c)
	}
	if st := w.as.Stats(); st.Refreshes != 2 || st.RefreshFailures != 0 {
		t.Fatalf("after two expiries: %+v", st)
	}

	// The grant is revoked at the provider: the call fails, saying why.
	w.as.RevokeRefreshTokens()
	c = w.callTool(s, "mcp__secure__echo", map[string]any{"text": "after revoke"})
	said := c.Error + " " + c.Reason + " " + string(c.Output)
	if c.Status == "succeeded" || !strings.Contains(said, "credential_expired") || !strings.Contains(said, oauthVaultName) || !strings.Contains(said, w.as.MCPURL) {
		t.Fatalf("the call after revocation should fail with credential_expired naming vault %s and prefix %s: %+v", oauthVaultName, w.as.MCPURL, c)
	}
	if got := credentialStatus(w.page("/vaults/" + w.vault)); !strings.Contains(got, "needs reconnecting") {
		t.Fatalf("the vault page's credential status after revocation reads %q", got)
	}
	if page := visibleText(w.page("/sessions/" + s.ID)); !strings.Contains(page, "needs reconnecting") {
		t.Fatalf("the session page does not say the credential needs reconnecting:\n%s", page)
	}
	// Its tools stay offered and say why, even after a fresh discovery.
	if resp, _ := w.browser.post("/sessions/"+s.ID+"/tools/refresh", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("refresh the session's tools: %d", resp.StatusCode)
	}
	if tools := w.offered(s); tools["mcp__secure__echo"] == "" || tools["mcp__secure__whoami"] == "" {
		t.Fatalf("after revocation the server's tools vanished: %v", tools)
	}
	if page := visibleText(w.page("/sessions/" + s.ID)); !strings.Contains(page, "credential_expired") || !strings.Contains(page, w.as.MCPURL) {
		t.Fatalf("the session page does not say why the server's tools fail:\n%s", page)
	}
	cred := w.apiGet("/vaults/" + w.vault + "/credentials")
	if !strings.Contains(cred, "needs_reconnecting") {
		t.Fatalf("Credential.list after revocation: %s", cred)
	}

	// Reconnect from the vault page: the tools work again.
	reconnect()
	if got := credentialStatus(w.page("/vaults/" + w.vault)); !strings.Contains(got, "connected") || strings.Contains(got, "reconnect") {
		t.Fatalf("after reconnecting the credential's status reads %q", got)
	}
	if c = w.callTool(s, "mcp__secure__echo", map[string]any{"text": "reconnected"}); c.Status != "succeeded" {
		t.Fatalf("echo after reconnecting: %+v", c)
	}
	if st := w.as.Stats(); st.CodeExchanges != 2 {
		t.Fatalf("reconnecting did not run the code flow again: %+v", st)
	}

	w.page("/vaults")
	w.page("/sessions")
	w.page("/sessions/" + s.ID)
	w.page("/audit")
	w.apiGet("/vaults/" + w.vault)
	w.apiGet("/sessions/" + s.ID + "/tool_calls")
	w.apiGet("/actions")
	w.searchSecrets("/versions/"+version+"/export", "/usage.csv")
}

// A server without dynamic client registration: the operator enters the
// client id and secret they registered at the provider.
func TestOAuthConnectWithEnteredClient(t *testing.T) {
	const clientID, clientSecret = "subako-console", "entered-secret-4f7e1c9a2b"
	w := newOAuthWorld(t, oauthtest.Options{DisableRegistration: true})
	w.as.AddClient(oauthtest.Client{ID: clientID, Secret: clientSecret, RedirectURIs: []string{w.callbackURL()}, Name: "Subako"})
	version := w.publish(secureConfig)
	// Without a client id, a server that does not register clients is a
	// message under the client id field.
	resp, page := w.browser.post("/vaults/"+w.vault+"/oauth/connect", url.Values{"prefix": {w.as.MCPURL}})
	w.keep("connect without a client id", page)
	if msg := fieldText(page, "oauth-client_id-error"); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "registration") {
		t.Fatalf("connect without a client id to a server without registration: %d, message %q\n%s", resp.StatusCode, msg, visibleText(page))
	}
	chrome := w.signIn(t)
	chrome.connect(clientID, clientSecret)
	if st := w.as.Stats(); st.Registrations != 0 || st.CodeExchanges != 1 {
		t.Fatalf("with an entered client: %+v", st)
	}
	s := w.newSession(version)
	c := w.callTool(s, "mcp__secure__whoami", map[string]any{})
	if c.Status != "succeeded" || !strings.Contains(string(c.Output), clientID) {
		t.Fatalf("whoami with the entered client: %+v %s", c, c.Output)
	}
	w.as.ExpireAccessTokens()
	if c = w.callTool(s, "mcp__secure__echo", map[string]any{"text": "refreshed"}); c.Status != "succeeded" {
		t.Fatalf("echo after expiry (refresh with the entered secret): %+v", c)
	}
	w.page("/vaults/" + w.vault)
	w.apiGet("/vaults/" + w.vault + "/credentials")
	w.searchSecrets("/versions/" + version + "/export")
}
