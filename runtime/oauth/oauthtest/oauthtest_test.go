package oauthtest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime/oauth/oauthtest"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func getJSON(t *testing.T, u string, out any) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

func postForm(t *testing.T, u string, form url.Values, user, pass string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func pkce() (verifier, challenge string) {
	verifier = strings.Repeat("v", 10) + base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorize shows the consent page, approves it and returns the code.
func authorize(t *testing.T, s *oauthtest.Server, clientID, redirect string, q url.Values) (code string, status int, body string) {
	t.Helper()
	q.Set("response_type", "code")
	q.Set("client_id", clientID)
	q.Set("redirect_uri", redirect)
	q.Set("state", "st-1")
	resp, err := noRedirect.Get(s.AuthorizeURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", resp.StatusCode, string(b) + resp.Header.Get("Location")
	}
	if !strings.Contains(string(b), `id="approve"`) {
		t.Fatalf("consent page has no approve button: %s", b)
	}
	// Post the page's form as a browser would.
	form := url.Values{"decision": {"approve"}}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(string(b), -1) {
		v := strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(m[2])
		form.Set(m[1], v)
	}
	resp, err = noRedirect.PostForm(s.AuthorizeURL, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != 302 || loc == nil {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := loc.Query().Get("state"); got != "st-1" {
		t.Fatalf("state came back %q", got)
	}
	return loc.Query().Get("code"), 302, loc.String()
}

type bearer struct{ token *string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+*b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func callTool(t *testing.T, s *oauthtest.Server, token *string, name string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.MCPURL, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	return sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func TestOAuthTestDiscovery(t *testing.T) {
	s := oauthtest.Start(t, oauthtest.Options{})
	resp, err := http.Post(s.MCPURL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("MCP without a token: %d", resp.StatusCode)
	}
	want := `Bearer resource_metadata="` + s.ResourceMeta + `"`
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Fatalf("WWW-Authenticate = %q, want %q", got, want)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if code := getJSON(t, s.ResourceMeta, &prm); code != 200 || prm.Resource != s.MCPURL || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != s.Issuer {
		t.Fatalf("resource metadata %d %+v", code, prm)
	}
	var asm map[string]any
	if code := getJSON(t, s.Issuer+"/.well-known/oauth-authorization-server", &asm); code != 200 {
		t.Fatalf("AS metadata %d", code)
	}
	if asm["issuer"] != s.Issuer || asm["token_endpoint"] != s.TokenURL || asm["registration_endpoint"] != s.RegisterURL || s.RegisterURL == "" {
		t.Fatalf("AS metadata %v", asm)
	}
	if m, _ := json.Marshal(asm["code_challenge_methods_supported"]); string(m) != `["S256"]` {
		t.Fatalf("code_challenge_methods_supported %s", m)
	}

	off := oauthtest.Start(t, oauthtest.Options{DisableRegistration: true})
	asm = nil
	getJSON(t, off.MetadataURL, &asm)
	if _, ok := asm["registration_endpoint"]; ok || off.RegisterURL != "" {
		t.Fatalf("registration off but advertised: %v", asm)
	}
	r2, _ := http.Post(off.Issuer+"/register", "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:1/cb"]}`))
	r2.Body.Close()
	if r2.StatusCode != 404 {
		t.Fatalf("register with registration off: %d", r2.StatusCode)
	}
}

func register(t *testing.T, s *oauthtest.Server, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(s.RegisterURL, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != 201 {
		t.Fatalf("register: %d %v", resp.StatusCode, out)
	}
	return out
}

func TestOAuthTestCodeFlowPKCERefreshRevoke(t *testing.T) {
	s := oauthtest.Start(t, oauthtest.Options{})
	const redirect = "http://127.0.0.1:9/oauth/callback"
	reg := register(t, s, `{"redirect_uris":["`+redirect+`"],"client_name":"Subako","token_endpoint_auth_method":"client_secret_post"}`)
	id, secret := reg["client_id"].(string), reg["client_secret"].(string)
	if id == "" || secret == "" {
		t.Fatalf("registration: %v", reg)
	}
	verifier, challenge := pkce()

	// PKCE is required and S256 only.
	if _, st, body := authorize(t, s, id, redirect, url.Values{}); st == 200 || !strings.Contains(body, "error=invalid_request") {
		t.Fatalf("no challenge: %d %s", st, body)
	}
	if _, st, body := authorize(t, s, id, redirect, url.Values{"code_challenge": {challenge}, "code_challenge_method": {"plain"}}); st == 200 || !strings.Contains(body, "error=invalid_request") {
		t.Fatalf("plain: %d %s", st, body)
	}
	if _, st, _ := authorize(t, s, id, "http://127.0.0.1:9/elsewhere", url.Values{"code_challenge": {challenge}, "code_challenge_method": {"S256"}}); st != 400 {
		t.Fatalf("unregistered redirect: %d", st)
	}

	code, _, _ := authorize(t, s, id, redirect, url.Values{"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "scope": {"mcp"}, "resource": {s.MCPURL}})
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "client_id": {id}, "client_secret": {secret}}
	if st, out := postForm(t, s.TokenURL, exchange, "", ""); st != 400 {
		t.Fatalf("exchange without verifier: %d %v", st, out)
	}
	// That failed attempt did not spend the code; a wrong verifier does.
	exchange.Set("code_verifier", verifier+"x")
	if st, out := postForm(t, s.TokenURL, exchange, "", ""); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %v", st, out)
	}
	code, _, _ = authorize(t, s, id, redirect, url.Values{"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "scope": {"mcp"}, "resource": {s.MCPURL}})
	exchange.Set("code", code)
	exchange.Set("code_verifier", verifier)
	st, tok := postForm(t, s.TokenURL, exchange, "", "")
	if st != 200 || tok["access_token"] == nil || tok["refresh_token"] == nil || tok["expires_in"].(float64) <= 0 {
		t.Fatalf("exchange: %d %v", st, tok)
	}
	if st, _ := postForm(t, s.TokenURL, exchange, "", ""); st != 400 {
		t.Fatalf("code reused: %d", st)
	}
	if got := s.Stats().LastResource; got != s.MCPURL {
		t.Fatalf("resource parameter recorded as %q", got)
	}

	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	res, err := callTool(t, s, &access, "whoami", nil)
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"subject":"alice"`) || !strings.Contains(string(b), id) {
		t.Fatalf("whoami said %s", b)
	}

	// Expired: the resource refuses it; the refresh token still works, rotates.
	s.ExpireAccessTokens()
	if _, err := callTool(t, s, &access, "echo", map[string]any{"text": "hi"}); err == nil {
		t.Fatal("an expired access token was accepted")
	}
	rf := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}
	st, tok2 := postForm(t, s.TokenURL, rf, id, secret)
	if st != 200 || tok2["refresh_token"] == refresh || tok2["access_token"] == access {
		t.Fatalf("refresh: %d %v", st, tok2)
	}
	if st, out := postForm(t, s.TokenURL, rf, id, secret); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("old refresh token reused: %d %v", st, out)
	}
	access, refresh = tok2["access_token"].(string), tok2["refresh_token"].(string)
	res, err = callTool(t, s, &access, "echo", map[string]any{"text": "hi"})
	if err != nil || res.IsError {
		t.Fatalf("echo after refresh: %v %+v", err, res)
	}
	// A refresh by another client is refused.
	if st, _ := postForm(t, s.TokenURL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, id, "wrong"); st != 401 {
		t.Fatalf("refresh with a wrong secret: %d", st)
	}

	s.RevokeRefreshTokens()
	if _, err := callTool(t, s, &access, "echo", map[string]any{"text": "hi"}); err == nil {
		t.Fatal("the revoked grant's access token was accepted")
	}
	if st, out := postForm(t, s.TokenURL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, id, secret); st != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("revoked refresh token: %d %v", st, out)
	}
	stats := s.Stats()
	if stats.Refreshes != 1 || stats.RefreshFailures != 2 || stats.CodeExchanges != 1 || stats.Registrations != 1 || stats.ToolCalls != 2 {
		t.Fatalf("stats %+v", stats)
	}

	kinds := map[string]int{}
	for _, sec := range s.Tokens() {
		kinds[sec.Kind]++
	}
	if kinds["access_token"] != 2 || kinds["refresh_token"] != 2 || kinds["code"] != 2 || kinds["code_verifier"] != 2 || kinds["client_secret"] != 1 {
		t.Fatalf("Tokens() kinds %v", kinds)
	}
}

func TestOAuthTestPublicClientAndPreregistered(t *testing.T) {
	s := oauthtest.Start(t, oauthtest.Options{DisableRegistration: true, AutoApprove: true,
		Clients: []oauthtest.Client{{ID: "entered", Secret: "entered-secret"}}})
	verifier, challenge := pkce()
	q := url.Values{"response_type": {"code"}, "client_id": {"entered"}, "redirect_uri": {"http://127.0.0.1:5/cb"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	resp, err := noRedirect.Get(s.AuthorizeURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != 302 || loc.Query().Get("code") == "" {
		t.Fatalf("auto-approve: %d %s", resp.StatusCode, loc)
	}
	ex := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {"http://127.0.0.1:5/cb"}, "code_verifier": {verifier}}
	if st, _ := postForm(t, s.TokenURL, ex, "entered", "nope"); st != 401 {
		t.Fatalf("wrong client secret: %d", st)
	}
	if st, out := postForm(t, s.TokenURL, ex, "entered", "entered-secret"); st != 200 {
		t.Fatalf("exchange: %d %v", st, out)
	}
	// A non-loopback redirect is refused for a client without registered URIs.
	q.Set("redirect_uri", "https://evil.example/cb")
	resp, _ = noRedirect.Get(s.AuthorizeURL + "?" + q.Encode())
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("foreign redirect: %d", resp.StatusCode)
	}

	// A public client (DCR with "none") sends only its id.
	s2 := oauthtest.Start(t, oauthtest.Options{AutoApprove: true})
	reg := register(t, s2, `{"redirect_uris":["http://127.0.0.1:5/cb"],"token_endpoint_auth_method":"none"}`)
	if _, ok := reg["client_secret"]; ok {
		t.Fatalf("a public client got a secret: %v", reg)
	}
	q.Set("client_id", reg["client_id"].(string))
	q.Set("redirect_uri", "http://127.0.0.1:5/cb")
	resp, _ = noRedirect.Get(s2.AuthorizeURL + "?" + q.Encode())
	resp.Body.Close()
	loc, _ = url.Parse(resp.Header.Get("Location"))
	ex.Set("code", loc.Query().Get("code"))
	ex.Set("client_id", reg["client_id"].(string))
	if st, out := postForm(t, s2.TokenURL, ex, "", ""); st != 200 || out["refresh_token"] == nil {
		t.Fatalf("public exchange: %d %v", st, out)
	}
}

func TestOAuthTestClientCredentials(t *testing.T) {
	s := oauthtest.Start(t, oauthtest.Options{Clients: []oauthtest.Client{{ID: "machine", Secret: "machine-secret"}}})
	api := func(token string) int {
		req, _ := http.NewRequest("GET", s.APIURL, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := api(""); st != 401 {
		t.Fatalf("API without a token: %d", st)
	}
	cc := url.Values{"grant_type": {"client_credentials"}, "scope": {"api"}}
	if st, _ := postForm(t, s.TokenURL, cc, "machine", "wrong"); st != 401 {
		t.Fatalf("wrong secret: %d", st)
	}
	st, tok := postForm(t, s.TokenURL, cc, "machine", "machine-secret")
	if st != 200 || tok["refresh_token"] != nil {
		t.Fatalf("client credentials: %d %v", st, tok)
	}
	access := tok["access_token"].(string)
	if st := api(access); st != 200 {
		t.Fatalf("API with the token: %d", st)
	}
	s.ExpireAccessTokens()
	if st := api(access); st != 401 {
		t.Fatalf("API with an expired token: %d", st)
	}
	if s.Stats().ClientCredentials != 1 || s.Stats().APICalls != 1 {
		t.Fatalf("stats %+v", s.Stats())
	}
}
