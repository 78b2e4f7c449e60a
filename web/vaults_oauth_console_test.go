package web_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/oauth/oauthtest"
)

// Connect with OAuth's mistakes sit under their fields and never echo the
// client secret; a correct form answers a page that takes the browser to
// the authorization server with the console's fixed redirect URI.
func TestOAuthConnectFormErrorsAndContinuePage(t *testing.T) {
	const clientSecret = "oauth-client-secret-Yp42-never-shown"
	e := newEnv(t)
	owner := e.owner()
	id := owner.createVault("customer-o")
	srv := oauthtest.Start(t, oauthtest.Options{DisableRegistration: true,
		Clients: []oauthtest.Client{{ID: "console", Secret: clientSecret, RedirectURIs: []string{e.srv.URL + "/vaults/oauth/callback"}}}})
	connect := "/vaults/" + id + "/oauth/connect"

	resp, page := owner.post(connect, url.Values{"prefix": {"ftp://files.example.com"}, "client_secret": {clientSecret}})
	if resp.StatusCode != http.StatusUnprocessableEntity || fieldText(page, "oauth-prefix-error") == "" || strings.Contains(page, clientSecret) {
		t.Fatalf("bad prefix: %d, message %q (or the secret echoed)", resp.StatusCode, fieldText(page, "oauth-prefix-error"))
	}
	resp, page = owner.post(connect, url.Values{"prefix": {srv.MCPURL}})
	msg := html.UnescapeString(fieldText(page, "oauth-client_id-error"))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "dynamic client registration") || !strings.Contains(msg, e.srv.URL+"/vaults/oauth/callback") {
		t.Fatalf("no registration and no client id: %d, message %q; want it to ask for a client id and name the redirect URI", resp.StatusCode, msg)
	}
	if !strings.Contains(page, `value="`+srv.MCPURL+`"`) {
		t.Fatal("the failed form lost the prefix typed")
	}

	resp, page = owner.post(connect, url.Values{"prefix": {srv.MCPURL}, "client_id": {"console"}, "client_secret": {clientSecret}, "scopes": {"mcp"}})
	if resp.StatusCode != http.StatusOK || strings.Contains(page, clientSecret) {
		t.Fatalf("connect: %d (or the secret is in the page)", resp.StatusCode)
	}
	m := regexp.MustCompile(`http-equiv="refresh" content="0;url=([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no refresh to the authorization server in %q", page)
	}
	au, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil || !strings.HasPrefix(au.String(), srv.AuthorizeURL) || au.Query().Get("redirect_uri") != e.srv.URL+"/vaults/oauth/callback" ||
		au.Query().Get("code_challenge_method") != "S256" || au.Query().Get("client_id") != "console" {
		t.Fatalf("authorization URL %q", m[1])
	}
}
