package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestSetupLinkWorksOnce(t *testing.T) {
	e := newEnv(t)
	token, ok, err := e.rt.EnsureSetupLink(t.Context())
	if err != nil || !ok {
		t.Fatalf("no setup link on an empty database: %v", err)
	}
	b := e.browser()
	if resp, page := b.get("/setup/" + token); resp.StatusCode != 200 || !strings.Contains(page, "Create the owner account") {
		t.Fatalf("setup page: %d", resp.StatusCode)
	}
	resp, _ := b.post("/setup/"+token, url.Values{"email": {"owner@example.com"}, "password": {"short"}})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a short password answered %d, want 422", resp.StatusCode)
	}
	resp, _ = b.post("/setup/"+token, url.Values{"email": {"owner@example.com"}, "password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("setup answered %d", resp.StatusCode)
	}
	if _, page := b.get("/"); !strings.Contains(page, `data-testid="dashboard"`) || !strings.Contains(page, "owner@example.com") {
		t.Fatal("after setup the owner does not see the dashboard")
	}
	if resp, page := e.browser().get("/setup/" + token); resp.StatusCode != 404 || !strings.Contains(page, "not valid") {
		t.Fatalf("the used link answered %d", resp.StatusCode)
	}
	if _, ok, _ := e.rt.EnsureSetupLink(t.Context()); ok {
		t.Fatal("a new setup link was made although an owner exists")
	}
}

func TestLoginLogoutAndCookieFlags(t *testing.T) {
	e := newEnv(t)
	e.owner()
	b := e.browser()
	resp, page := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {"wrong password"}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "email or password is wrong") {
		t.Fatalf("wrong password answered %d", resp.StatusCode)
	}
	if resp, _ := b.get("/"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("an anonymous dashboard answered %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = b.post("/login", url.Values{"email": {"Owner@Example.com"}, "password": {password}, "next": {"/people"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/people" {
		t.Fatalf("login answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookie := resp.Header.Get("Set-Cookie")
	for _, flag := range []string{"HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(cookie, flag) {
			t.Errorf("session cookie lacks %s: %s", flag, cookie)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("cookie over plain HTTP is Secure, so the browser would drop it: %s", cookie)
	}
	if resp, _ := b.get("/"); resp.StatusCode != 200 {
		t.Fatalf("signed-in dashboard answered %d", resp.StatusCode)
	}
	tls, _ := e.browser().do(http.MethodPost, "/login", url.Values{"email": {"owner@example.com"}, "password": {password}},
		map[string]string{"X-Forwarded-Proto": "https"})
	if !strings.Contains(tls.Header.Get("Set-Cookie"), "Secure") {
		t.Errorf("cookie over TLS is not Secure: %s", tls.Header.Get("Set-Cookie"))
	}
	if resp, _ := b.post("/logout", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout answered %d", resp.StatusCode)
	}
	if resp, _ := b.get("/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after logout the dashboard answered %d", resp.StatusCode)
	}
	if rejected := !strings.Contains(safeNextProbe(e), "evil"); !rejected {
		t.Fatal("login redirected off-site")
	}
}

// safeNextProbe signs in with next pointing off-site and returns where it went.
func safeNextProbe(e *env) string {
	resp, _ := e.browser().post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}, "next": {"//evil.example/"}})
	return resp.Header.Get("Location")
}

func TestCrossOriginPostRefused(t *testing.T) {
	e := newEnv(t)
	b := e.owner()
	resp, page := b.do(http.MethodPost, "/agents", url.Values{"name": {"forged"}}, map[string]string{"Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "Cross-origin") {
		t.Fatalf("a cross-site POST answered %d", resp.StatusCode)
	}
	resp, _ = b.do(http.MethodPost, "/agents", url.Values{"name": {"forged"}}, map[string]string{
		"Sec-Fetch-Site": "", "Origin": "https://evil.example"})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a POST with a foreign Origin answered %d", resp.StatusCode)
	}
	if resp, _ := b.post("/agents", url.Values{"name": {"real"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a same-origin POST answered %d", resp.StatusCode)
	}
	var agents []map[string]any
	e.api(b.token(), "GET", "/agents", nil, &agents)
	if len(agents) != 1 || agents[0]["name"] != "real" {
		t.Fatalf("agents after the forged and the real POST: %v", agents)
	}
}
