package oauth_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/oauth"
)

func jsonHandler(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}

// An authorization server that serves RFC 8414 metadata for issuer.
func startAS(t *testing.T, issuer func() string, mux *http.ServeMux) *httptest.Server {
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		jsonHandler(map[string]any{"issuer": issuer(), "authorization_endpoint": issuer() + "/authorize",
			"token_endpoint": issuer() + "/token", "code_challenge_methods_supported": []string{"S256"}})(w, r)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestDiscover(t *testing.T) {
	var as *httptest.Server
	as = startAS(t, func() string { return as.URL }, http.NewServeMux())
	tests := []struct {
		name string
		// rs serves the resource; prm is where it serves its metadata.
		wellKnown bool
		hint      bool
		wantErr   string
	}{
		{"well-known path", true, false, ""},
		{"WWW-Authenticate hint only", false, true, ""},
		{"no metadata: the resource's origin is the issuer", false, false, "no authorization server metadata"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			rs := httptest.NewServer(mux)
			defer rs.Close()
			prm := map[string]any{"resource": rs.URL + "/mcp", "authorization_servers": []string{as.URL}, "scopes_supported": []string{"mcp"}}
			if tc.wellKnown {
				mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", jsonHandler(prm))
			}
			if tc.hint {
				mux.HandleFunc("GET /meta/elsewhere", jsonHandler(prm))
			}
			mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
				if tc.hint {
					w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+rs.URL+`/meta/elsewhere"`)
				}
				w.WriteHeader(http.StatusUnauthorized)
			})
			c := &oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}
			md, err := c.Discover(t.Context(), rs.URL+"/mcp")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if md.Issuer != as.URL || md.TokenEndpoint != as.URL+"/token" || md.Resource != rs.URL+"/mcp" || len(md.ScopesSupported) != 1 {
				t.Fatalf("metadata: %+v", md)
			}
		})
	}
}

// RFC 8414 section 3.3: metadata naming another issuer is refused (mix-up).
func TestDiscoverRefusesAnotherIssuer(t *testing.T) {
	as := startAS(t, func() string { return "https://evil.example" }, http.NewServeMux())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", jsonHandler(map[string]any{"authorization_servers": []string{as.URL}}))
	rs := httptest.NewServer(mux)
	defer rs.Close()
	_, err := (&oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}).Discover(t.Context(), rs.URL)
	if err == nil || !strings.Contains(err.Error(), "issuer") {
		t.Fatalf("err = %v, want a refusal naming the issuer", err)
	}
}

func TestAuthURLHasPKCEStateAndResource(t *testing.T) {
	verifier, challenge := oauth.NewVerifier()
	if len(verifier) < 43 || oauth.Challenge(verifier) != challenge {
		t.Fatalf("verifier %d characters, challenge mismatch", len(verifier))
	}
	s := oauth.Settings{AuthorizeURL: "https://as.example/authorize?tenant=1", ClientID: "c1", RedirectURI: "https://subako.example/vaults/oauth/callback",
		Scopes: "mcp read", Resource: "https://mcp.example/mcp"}
	u, err := url.Parse(oauth.AuthURL(s, "st", challenge))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, want := range map[string]string{"tenant": "1", "response_type": "code", "client_id": "c1", "state": "st", "code_challenge": challenge,
		"code_challenge_method": "S256", "scope": "mcp read", "resource": "https://mcp.example/mcp", "redirect_uri": s.RedirectURI} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	if strings.Contains(u.String(), verifier) {
		t.Fatal("the verifier is in the authorization URL")
	}
}

// A refused refresh says why (the server's code) and is permanent, and
// neither the refresh token nor the client secret is in its text.
func TestTokenErrorsNameTheCodeNotTheSecrets(t *testing.T) {
	var form url.Values
	var user, pass string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		form = r.PostForm
		user, pass, _ = r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant","error_description":"refresh token revoked"}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := oauth.Settings{TokenURL: srv.URL + "/token", ClientID: "c1", Resource: "https://mcp.example/mcp", AuthMethod: "client_secret_basic"}
	_, err := (&oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}).Refresh(t.Context(), s, "cs-SECRET-1", "rt-SECRET-2")
	var oe *oauth.Error
	if !errors.As(err, &oe) || !oe.Permanent() || oe.Code != "invalid_grant" {
		t.Fatalf("err = %v, want a permanent invalid_grant", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("error text holds a secret: %s", err)
	}
	if form.Get("grant_type") != "refresh_token" || form.Get("refresh_token") != "rt-SECRET-2" || form.Get("resource") != s.Resource ||
		user != "c1" || pass != "cs-SECRET-1" || form.Get("client_secret") != "" {
		t.Fatalf("token request: form %v, basic %q", form, user)
	}
	if got := (oauth.Secrets{AccessToken: "at-SECRET"}); strings.Contains(got.String()+got.GoString(), "SECRET") {
		t.Fatal("Secrets prints its values")
	}
}

// client_secret_post puts the client in the form; a public client sends
// its id alone. Either way the answer's expiry is read.
func TestClientAuthMethods(t *testing.T) {
	for _, tc := range []struct{ method, secret string }{{"client_secret_post", "cs-1"}, {"none", ""}} {
		t.Run(tc.method, func(t *testing.T) {
			var form url.Values
			var basic bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				form = r.PostForm
				_, _, basic = r.BasicAuth()
				jsonHandler(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 120})(w, r)
			}))
			defer srv.Close()
			s := oauth.Settings{TokenURL: srv.URL, ClientID: "c1", AuthMethod: tc.method}
			tok, err := (&oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}).ClientCredentials(t.Context(), s, tc.secret)
			if err != nil || tok.AccessToken != "at" || tok.ExpiresAt.IsZero() {
				t.Fatalf("token %v, err %v", tok.ExpiresAt, err)
			}
			if basic || form.Get("client_id") != "c1" || form.Get("client_secret") != tc.secret || form.Get("grant_type") != "client_credentials" {
				t.Fatalf("form %v, basic %v", form, basic)
			}
		})
	}
}

// A token endpoint that echoes the request in its error (as some do: "the
// refresh token X is revoked", or the whole form) gets none of the
// request's secrets into the error's text, which reaches the vault page,
// the log and the tool's error.
func TestTokenErrorEchoingTheRequestIsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant " + r.PostForm.Get("x"),
			"error_description": "bad request " + string(body) + " auth " + r.Header.Get("Authorization") + " form " + r.FormValue("refresh_token")})
	}))
	defer srv.Close()
	c := &oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}
	for _, method := range []string{"client_secret_basic", "client_secret_post"} {
		s := oauth.Settings{TokenURL: srv.URL, ClientID: "c1", AuthMethod: method}
		_, err1 := c.Refresh(t.Context(), s, "cs-SECRET/1+x", "rt-SECRET=2&")
		_, err2 := c.Exchange(t.Context(), s, "cs-SECRET/1+x", "code-SECRET-3", "verifier-SECRET-4")
		for _, err := range []error{err1, err2} {
			var oe *oauth.Error
			if !errors.As(err, &oe) || !oe.Permanent() {
				t.Fatalf("%s: err = %v, want a permanent refusal", method, err)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "YzE6Y3MtU0VDUkVU") {
				t.Fatalf("%s: error text holds a secret: %s", method, err)
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Fatalf("%s: error text %q: the echo was not there to redact", method, err)
			}
		}
	}
}

// Metadata naming another server's resource is not used (RFC 9728 3.3):
// else a hostile MCP server could have the person consent to tokens for
// someone else's resource at a shared authorization server, and receive
// them on its own calls. A parent of the URL is fine.
func TestDiscoverRefusesAnotherResource(t *testing.T) {
	var as *httptest.Server
	as = startAS(t, func() string { return as.URL }, http.NewServeMux())
	for _, tc := range []struct {
		resource func(rs string) string
		ok       bool
	}{
		{func(string) string { return "https://victim.example/mcp" }, false},
		{func(rs string) string { return rs + "/mcpx" }, false},
		{func(rs string) string { return rs + "/other" }, false},
		{func(rs string) string { return rs + "/mcp" }, true},
		{func(rs string) string { return rs }, true},
	} {
		mux := http.NewServeMux()
		rs := httptest.NewServer(mux)
		res := tc.resource(rs.URL)
		mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", jsonHandler(map[string]any{"resource": res, "authorization_servers": []string{as.URL}}))
		md, err := (&oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}).Discover(t.Context(), rs.URL+"/mcp")
		rs.Close()
		if tc.ok && (err != nil || md.Resource != res) {
			t.Errorf("resource %s: err %v, resource %q", res, err, md.Resource)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "RFC 9728")) {
			t.Errorf("resource %s: err = %v, want a refusal", res, err)
		}
	}
}

// The authorization and token endpoints must be https unless plain http is
// allowed (--egress-allow-private): a code or client secret is not sent in
// the clear, and no other scheme (javascript:, data:, file:) is followed or
// handed to the browser.
func TestEndpointsMustBeHTTPSAndWebURLs(t *testing.T) {
	var as *httptest.Server
	authz := ""
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		jsonHandler(map[string]any{"issuer": as.URL, "authorization_endpoint": authz, "token_endpoint": as.URL + "/token",
			"registration_endpoint": as.URL + "/register"})(w, r)
	})
	tokenHits := 0
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) { tokenHits++ })
	as = httptest.NewServer(mux)
	defer as.Close()
	rsMux := http.NewServeMux()
	rsMux.HandleFunc("GET /.well-known/oauth-protected-resource", jsonHandler(map[string]any{"authorization_servers": []string{as.URL}}))
	rs := httptest.NewServer(rsMux)
	defer rs.Close()

	strict := &oauth.Client{HTTP: http.DefaultClient}
	loose := &oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}
	authz = as.URL + "/authorize"
	if _, err := strict.Discover(t.Context(), rs.URL); err == nil || !strings.Contains(err.Error(), "https") {
		t.Fatalf("http authorization server without AllowHTTP: err = %v", err)
	}
	if _, err := loose.Discover(t.Context(), rs.URL); err != nil {
		t.Fatalf("http authorization server with AllowHTTP: %v", err)
	}
	for _, bad := range []string{"javascript:alert(document.cookie)//", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd", "//evil.example/authorize", "http://user:pw@evil.example/a"} {
		authz = bad
		if md, err := loose.Discover(t.Context(), rs.URL); err == nil || !strings.Contains(err.Error(), "authorization_endpoint") {
			t.Errorf("authorization_endpoint %q: err = %v, endpoint %q", bad, err, md.AuthorizationEndpoint)
		}
	}
	s := oauth.Settings{TokenURL: as.URL + "/token", ClientID: "c1"}
	if _, err := strict.Refresh(t.Context(), s, "cs", "rt"); err == nil || !strings.Contains(err.Error(), "https") || tokenHits != 0 {
		t.Fatalf("refresh at an http token endpoint without AllowHTTP: err = %v, %d requests sent", err, tokenHits)
	}
	if _, err := strict.Register(t.Context(), oauth.Metadata{RegistrationEndpoint: as.URL + "/register"}, "https://subako.example/cb", ""); err == nil || !strings.Contains(err.Error(), "https") {
		t.Fatalf("registration at an http endpoint without AllowHTTP: err = %v", err)
	}
}

// An absurd expires_in (1e300 seconds) is not turned into an expiry in the
// past by overflow, which would refresh the token at every call.
func TestHugeExpiresInIsNotInThePast(t *testing.T) {
	for _, exp := range []any{1e300, "9223372036854775807", 1e12} {
		srv := httptest.NewServer(jsonHandler(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": exp}))
		tok, err := (&oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}).ClientCredentials(t.Context(), oauth.Settings{TokenURL: srv.URL, ClientID: "c1"}, "cs")
		srv.Close()
		if err != nil || !tok.ExpiresAt.After(time.Now().Add(24*time.Hour)) {
			t.Errorf("expires_in %v: expires at %v (err %v), want far in the future", exp, tok.ExpiresAt, err)
		}
	}
}

// A registration answer's client id is refused when it is huge or holds
// control characters (it is shown on the vault page and sent in URLs).
func TestRegistrationAnswerBounded(t *testing.T) {
	for _, id := range []string{strings.Repeat("c", 100_000), "c1\r\nSet-Cookie: x=1", "ok-client"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(map[string]any{"client_id": id})
		}))
		reg, err := (&oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}).Register(t.Context(), oauth.Metadata{RegistrationEndpoint: srv.URL}, "https://subako.example/cb", "")
		srv.Close()
		if id == "ok-client" {
			if err != nil || reg.ClientID != id {
				t.Errorf("a plain client id: %v", err)
			}
		} else if err == nil || !strings.Contains(err.Error(), "client_id") {
			t.Errorf("client id of %d bytes: err = %v, want a refusal", len(id), err)
		}
	}
}

// A resource_metadata URL of 100,000 characters in a 401's header does not
// become a 100,000-character error on the person's page.
func TestErrorTextBoundedWhateverTheServerSent(t *testing.T) {
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	defer rs.Close()
	long := rs.URL + "/meta/" + strings.Repeat("a", 100_000)
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+long+`"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("GET /meta/", func(w http.ResponseWriter, r *http.Request) {
		jsonHandler(map[string]any{"resource": rs.URL + "/mcp", "authorization_servers": []string{rs.URL + "/" + strings.Repeat("b", 100_000)}})(w, r)
	})
	_, err := (&oauth.Client{HTTP: http.DefaultClient, AllowHTTP: true}).Discover(t.Context(), rs.URL+"/mcp")
	if err == nil || len(err.Error()) > 2000 {
		t.Fatalf("error of %d characters: %.300v", len(fmt.Sprint(err)), err)
	}
}
