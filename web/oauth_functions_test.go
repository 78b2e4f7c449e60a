package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/oauth/oauthtest"
)

// pageConfig grants the html package the resource server's origin.
const pageConfig = `{"functions": [{"name": "page", "package": "html", "version": "1.0.0", "origins": ["ORIGIN"], "default_policy": "allow"}]}`

// A vault's client-credentials credential for a function's granted origin:
// set in the console (a refused client is an error under the secret field),
// the function's http_fetch carries a token from the token endpoint, a new
// one is fetched when the API refuses an expired one (one Action), and none
// of the values shows up anywhere.
func TestOAuthClientCredentialsForFunctionOrigin(t *testing.T) {
	const clientSecret = "machine-secret-9d2b7a41e6"
	w := newOAuthWorld(t, oauthtest.Options{Clients: []oauthtest.Client{{ID: "machine", Secret: clientSecret}}}, "html")
	form := url.Values{"prefix": {w.as.ResourceURL}, "type": {"client_credentials"}, "token_url": {w.as.TokenURL},
		"client_id": {"machine"}, "secret": {"not-the-secret"}, "scopes": {"api"}}
	resp, page := w.browser.post("/vaults/"+w.vault+"/credentials", form)
	w.keep("refused client credentials", page)
	if resp.StatusCode != http.StatusUnprocessableEntity || fieldText(page, "cred-secret-error") == "" || strings.Contains(page, "not-the-secret") {
		t.Fatalf("a client the token endpoint refuses: %d, message under secret %q", resp.StatusCode, fieldText(page, "cred-secret-error"))
	}
	w.extra = append(w.extra, oauthtest.Secret{Kind: "refused client secret", Value: "not-the-secret"})
	form.Set("secret", clientSecret)
	if resp, page := w.browser.post("/vaults/"+w.vault+"/credentials", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Set credential (client credentials): %d\n%s", resp.StatusCode, page)
	}
	vaultPage := w.page("/vaults/" + w.vault)
	if !strings.Contains(vaultPage, w.as.ResourceURL) || !strings.Contains(vaultPage, ">machine<") {
		t.Fatalf("the vault page does not show the prefix and the client id")
	}

	version := w.publish(pageConfig)
	s := w.newSession(version)
	c := w.callTool(s, "fn__page__parse", map[string]any{"url": w.as.APIURL})
	if c.Status != "succeeded" || !strings.Contains(string(c.Output), "hello machine") {
		t.Fatalf("the function's fetch with the client-credentials token: %+v %s", c, c.Output)
	}
	issued := w.as.Stats().ClientCredentials

	// The API refuses the expired token: one new token, one Action.
	w.as.ExpireAccessTokens()
	before := w.actions()
	c = w.callTool(s, "fn__page__parse", map[string]any{"url": w.as.APIURL})
	if c.Status != "succeeded" || !strings.Contains(string(c.Output), "hello machine") {
		t.Fatalf("the fetch after the token expired: %+v %s", c, c.Output)
	}
	if got := w.as.Stats().ClientCredentials - issued; got != 1 {
		t.Fatalf("%d new client-credentials tokens for the call, want 1", got)
	}
	if n := w.actions() - before; n != 1 {
		t.Fatalf("the call left %d Actions, want 1", n)
	}

	// The provider rotates the client's secret: the next token request is
	// refused and the call fails saying which vault and prefix.
	w.as.AddClient(oauthtest.Client{ID: "machine", Secret: "rotated-at-the-provider"})
	w.as.ExpireAccessTokens()
	c = w.callTool(s, "fn__page__parse", map[string]any{"url": w.as.APIURL})
	if c.Status != "failed" || !strings.Contains(c.Error, "credential_expired") || !strings.Contains(c.Error, oauthVaultName) || !strings.Contains(c.Error, w.as.ResourceURL) {
		t.Fatalf("the fetch after the client's secret changed should fail with credential_expired naming vault and prefix: %+v", c)
	}
	if !strings.Contains(c.Error, "set it again on the vault's page") || strings.Contains(c.Error, "reconnect it") {
		t.Fatalf("a client-credentials credential has no Reconnect; the error should say to set it again: %s", c.Error)
	}
	if page := visibleText(w.page("/vaults/" + w.vault)); !strings.Contains(page, "needs reconnecting") {
		t.Fatalf("the vault page does not say the credential needs attention:\n%s", page)
	}

	// A session without the vault reaches the API without a token.
	var bare session
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": version, "title": "bare"}, &bare); st != 201 {
		t.Fatalf("Session.create: %d", st)
	}
	c = w.callTool(bare, "fn__page__parse", map[string]any{"url": w.as.APIURL})
	if c.Status != "failed" || !strings.Contains(c.Error, "401") {
		t.Fatalf("without the vault: %+v", c)
	}

	w.page("/vaults/" + w.vault)
	w.page("/sessions/" + s.ID)
	w.apiGet("/vaults/" + w.vault + "/credentials")
	w.apiGet("/sessions/" + s.ID + "/tool_calls")
	w.apiGet("/actions")
	w.searchSecrets("/versions/"+version+"/export", "/usage.csv")
}
