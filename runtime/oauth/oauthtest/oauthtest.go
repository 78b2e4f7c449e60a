// Package oauthtest runs a real OAuth 2.1 authorization server and a resource
// server protected by it on loopback, for tests of Subako's OAuth credentials.
//
// The authorization server is built on github.com/go-oauth2/oauth2/v4 (the
// go-oauth2 project's server, manager and in-memory token store): it issues and
// checks authorization codes (PKCE S256 only: a missing challenge, the "plain"
// method and a missing or wrong verifier are refused), access tokens, refresh
// tokens (rotated: a refresh token is invalid once used) and client-credentials
// tokens. It was chosen over github.com/ory/fosite, whose v0.49 pulls about 70
// modules (ory/x, OpenTelemetry, gRPC, viper) into go.mod, and over
// zitadel/oidc's op package, which is OpenID Connect first and needs a large
// storage implementation; go-oauth2 adds ten small modules. What the library
// does not do, this package adds on top of it: RFC 8414 metadata, RFC 7591
// dynamic client registration (switchable off), RFC 7009 revocation, exact
// redirect URI matching, client authentication on every grant, a consent page
// a headless browser can click through, and the test controls.
//
// The resource server is an MCP server made with the official Go MCP SDK (tools
// echo and whoami) behind the SDK's bearer-token middleware, so a request
// without a valid access token gets 401 with
// `WWW-Authenticate: Bearer resource_metadata="…"`, and it serves its RFC 9728
// protected-resource metadata. It also serves a plain JSON API that needs a
// client-credentials token.
package oauthtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	oerrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/generates"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/models"
	"github.com/go-oauth2/oauth2/v4/server"
	"github.com/go-oauth2/oauth2/v4/store"
)

// Options configure a Server. The zero value is a server with dynamic client
// registration, one-hour access tokens and a consent page.
type Options struct {
	// DisableRegistration turns RFC 7591 dynamic client registration off: the
	// metadata has no registration_endpoint and /register answers 404.
	DisableRegistration bool
	// AccessTTL is the lifetime of every access token (default one hour).
	AccessTTL time.Duration
	// RefreshTTL is the lifetime of refresh tokens (default 24 hours).
	RefreshTTL time.Duration
	// Clients are registered before the server starts (for a server without
	// dynamic registration, or for client credentials).
	Clients []Client
	// AutoApprove approves an authorization request without showing the
	// consent page.
	AutoApprove bool
	// Subject is the user who approves on the consent page (default "alice").
	Subject string
	// Scopes are the scopes the servers advertise (default "mcp", "api").
	Scopes []string
	// Logf receives one line per request to either server (default: none).
	Logf func(format string, args ...any)
}

// Client is a registered OAuth client.
type Client struct {
	ID string
	// Secret is empty for a public client (token_endpoint_auth_method none).
	Secret string
	// RedirectURIs are matched exactly. Empty means any http://127.0.0.1 or
	// http://localhost URI (for a client registered before the test knows its
	// console's port).
	RedirectURIs []string
	// Name is shown on the consent page.
	Name string
}

// Secret is one secret value the servers issued or were sent.
type Secret struct {
	Kind  string // access_token, refresh_token, code, code_verifier, client_secret
	Value string
}

// Stats count what the servers saw.
type Stats struct {
	Registrations       int // successful dynamic registrations
	Authorizations      int // codes issued
	CodeExchanges       int // codes exchanged for tokens
	Refreshes           int // successful refresh grants
	RefreshFailures     int // refused refresh grants
	ClientCredentials   int // client-credentials tokens issued
	Revocations         int // calls to /revoke
	Unauthorized        int // resource requests whose bearer token was refused (invalid, expired, revoked); a request without one is not counted
	ToolCalls           int // tools/call requests that reached the MCP server
	APICalls            int // API requests that reached the handler
	ConsentPagesShown   int
	LastResource        string // the RFC 8707 resource parameter of the last authorization request
	LastScope           string // the scope of the last authorization request
	LastRegisteredNames []string
}

// Server is a running authorization server and resource server.
type Server struct {
	// Issuer is the authorization server's base URL (and RFC 8414 issuer).
	Issuer        string
	MetadataURL   string // Issuer + /.well-known/oauth-authorization-server
	AuthorizeURL  string
	TokenURL      string
	RegisterURL   string // empty when registration is off
	RevokeURL     string
	ResourceURL   string // the resource server's base URL
	MCPURL        string // the MCP endpoint (streamable HTTP)
	APIURL        string // GET: JSON about the client-credentials caller
	ResourceMeta  string // the RFC 9728 metadata URL named in WWW-Authenticate
	ResourceIdent string // the "resource" value of that metadata (= MCPURL)

	opts    Options
	srv     *server.Server
	manager *manage.Manager
	clients *store.ClientStore
	tokens  oauth2.TokenStore

	// tokenMu serialises the token endpoint with the test controls.
	tokenMu   sync.Mutex
	authCfg   *manage.Config
	ccCfg     *manage.Config
	refCfg    *manage.RefreshingConfig
	mu        sync.Mutex
	secrets   []Secret
	seen      map[string]bool
	accessOf  map[string]string // access token → grant ("user" or "client")
	expiredAt time.Time         // access tokens made at or before this are expired
	stats     Stats
	as, rs    *httptest.Server
}

// Start starts both servers on 127.0.0.1; they stop when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.AccessTTL <= 0 {
		opts.AccessTTL = time.Hour
	}
	if opts.RefreshTTL <= 0 {
		opts.RefreshTTL = 24 * time.Hour
	}
	if opts.Subject == "" {
		opts.Subject = "alice"
	}
	if len(opts.Scopes) == 0 {
		opts.Scopes = []string{"mcp", "api"}
	}
	s := &Server{opts: opts, seen: map[string]bool{}, accessOf: map[string]string{}}

	s.manager = manage.NewDefaultManager()
	s.authCfg = &manage.Config{AccessTokenExp: opts.AccessTTL, RefreshTokenExp: opts.RefreshTTL, IsGenerateRefresh: true}
	s.ccCfg = &manage.Config{AccessTokenExp: opts.AccessTTL}
	s.refCfg = &manage.RefreshingConfig{AccessTokenExp: opts.AccessTTL, RefreshTokenExp: opts.RefreshTTL,
		IsGenerateRefresh: true, IsResetRefreshTime: true, IsRemoveAccess: true, IsRemoveRefreshing: true}
	s.manager.SetAuthorizeCodeTokenCfg(s.authCfg)
	s.manager.SetClientTokenCfg(s.ccCfg)
	s.manager.SetRefreshTokenCfg(s.refCfg)
	s.manager.SetAuthorizeCodeExp(5 * time.Minute)
	s.manager.MapAccessGenerate(generates.NewAccessGenerate())
	ts, err := store.NewMemoryTokenStore()
	if err != nil {
		t.Fatalf("oauthtest: token store: %v", err)
	}
	s.tokens = &recordingStore{TokenStore: ts, s: s}
	s.manager.MapTokenStorage(s.tokens)
	s.clients = store.NewClientStore()
	s.manager.MapClientStorage(s.clients)
	s.manager.SetValidateURIHandler(validateRedirect)

	cfg := server.NewConfig()
	cfg.ForcePKCE = true
	cfg.AllowedCodeChallengeMethods = []oauth2.CodeChallengeMethod{oauth2.CodeChallengeS256}
	cfg.AllowedResponseTypes = []oauth2.ResponseType{oauth2.Code}
	cfg.AllowedGrantTypes = []oauth2.GrantType{oauth2.AuthorizationCode, oauth2.Refreshing, oauth2.ClientCredentials}
	s.srv = server.NewServer(cfg, s.manager)
	s.srv.ClientInfoHandler = clientInfo
	s.srv.UserAuthorizationHandler = s.userAuthorization
	s.srv.SetInternalErrorHandler(func(err error) *oerrors.Response {
		return &oerrors.Response{Error: oerrors.ErrServerError, Description: err.Error(), StatusCode: 500}
	})

	s.srv.SetResponseErrorHandler(func(re *oerrors.Response) {
		// RFC 6749 §5.2: invalid_grant is a 400 (go-oauth2 answers 401).
		if re.Error != oerrors.ErrInvalidClient && re.StatusCode == http.StatusUnauthorized {
			re.StatusCode = http.StatusBadRequest
		}
	})

	s.as = httptest.NewUnstartedServer(nil)
	s.rs = httptest.NewUnstartedServer(nil)
	s.Issuer = "http://" + s.as.Listener.Addr().String()
	s.MetadataURL = s.Issuer + "/.well-known/oauth-authorization-server"
	s.AuthorizeURL = s.Issuer + "/authorize"
	s.TokenURL = s.Issuer + "/token"
	if !opts.DisableRegistration {
		s.RegisterURL = s.Issuer + "/register"
	}
	s.RevokeURL = s.Issuer + "/revoke"
	s.ResourceURL = "http://" + s.rs.Listener.Addr().String()
	s.MCPURL = s.ResourceURL + "/mcp"
	s.APIURL = s.ResourceURL + "/api/whoami"
	s.ResourceMeta = s.ResourceURL + "/.well-known/oauth-protected-resource/mcp"
	s.ResourceIdent = s.MCPURL
	s.as.Config.Handler = s.logged("as", s.asHandler())
	s.rs.Config.Handler = s.logged("rs", s.rsHandler())
	s.as.Start()
	s.rs.Start()
	t.Cleanup(func() { s.rs.Close(); s.as.Close() })

	for _, c := range opts.Clients {
		s.AddClient(c)
	}
	return s
}

// AddClient registers a client (as an operator would in the provider's console).
func (s *Server) AddClient(c Client) {
	domain := "*loopback"
	if len(c.RedirectURIs) > 0 {
		domain = strings.Join(c.RedirectURIs, "\n")
	}
	// models.Client has no name: UserID carries it for the consent page.
	_ = s.clients.Set(c.ID, &models.Client{ID: c.ID, Secret: c.Secret, Domain: domain, Public: c.Secret == "", UserID: c.Name})
	if c.Secret != "" {
		s.record("client_secret", c.Secret)
	}
}

// ExpireAccessTokens makes every access token issued so far expired (the
// resource server answers 401 to it); refresh tokens keep working.
func (s *Server) ExpireAccessTokens() {
	s.tokenMu.Lock()
	defer s.tokenMu.Unlock()
	s.mu.Lock()
	s.expiredAt = time.Now()
	s.mu.Unlock()
}

// RevokeRefreshTokens revokes every refresh token issued so far and the access
// tokens of those grants (RFC 7009 §2.1), as a user revoking the app's access
// at the provider would. Client-credentials tokens are left alone.
func (s *Server) RevokeRefreshTokens() {
	s.tokenMu.Lock()
	defer s.tokenMu.Unlock()
	s.mu.Lock()
	var refresh, access []string
	for _, sec := range s.secrets {
		switch {
		case sec.Kind == "refresh_token":
			refresh = append(refresh, sec.Value)
		case sec.Kind == "access_token" && s.accessOf[sec.Value] == "user":
			access = append(access, sec.Value)
		}
	}
	s.mu.Unlock()
	ctx := context.Background()
	for _, r := range refresh {
		_ = s.tokens.RemoveByRefresh(ctx, r)
	}
	for _, a := range access {
		_ = s.tokens.RemoveByAccess(ctx, a)
	}
}

// SetAccessTTL changes the lifetime of access tokens issued from now on.
func (s *Server) SetAccessTTL(d time.Duration) {
	s.tokenMu.Lock()
	defer s.tokenMu.Unlock()
	s.authCfg.AccessTokenExp = d
	s.ccCfg.AccessTokenExp = d
	s.refCfg.AccessTokenExp = d
}

// Tokens returns every secret value issued or received so far: access and
// refresh tokens, authorization codes, PKCE verifiers and client secrets.
func (s *Server) Tokens() []Secret {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.secrets)
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.LastRegisteredNames = slices.Clone(st.LastRegisteredNames)
	return st
}

func (s *Server) record(kind, value string) {
	if value == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[value] {
		return
	}
	s.seen[value] = true
	s.secrets = append(s.secrets, Secret{Kind: kind, Value: value})
}

func (s *Server) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// recordingStore notes every code and token the manager stores.
type recordingStore struct {
	oauth2.TokenStore
	s *Server
}

func (r *recordingStore) Create(ctx context.Context, info oauth2.TokenInfo) error {
	if err := r.TokenStore.Create(ctx, info); err != nil {
		return err
	}
	if c := info.GetCode(); c != "" {
		r.s.record("code", c)
		r.s.count(func(st *Stats) { st.Authorizations++ })
		return nil
	}
	grant := "client"
	if info.GetUserID() != "" {
		grant = "user"
	}
	r.s.mu.Lock()
	r.s.accessOf[info.GetAccess()] = grant
	r.s.mu.Unlock()
	r.s.record("access_token", info.GetAccess())
	r.s.record("refresh_token", info.GetRefresh())
	return nil
}

// validateRedirect matches a redirect URI exactly against the registered ones
// (one per line), or any loopback http URI for "*loopback".
func validateRedirect(registered, redirect string) error {
	if registered == "*loopback" {
		u, err := url.Parse(redirect)
		if err != nil || u.Scheme != "http" || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
			return oerrors.ErrInvalidRedirectURI
		}
		return nil
	}
	for _, r := range strings.Split(registered, "\n") {
		if r == redirect {
			return nil
		}
	}
	return oerrors.ErrInvalidRedirectURI
}

// clientInfo reads client_secret_basic, else client_secret_post, else a public
// client's client_id.
func clientInfo(r *http.Request) (string, string, error) {
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		return id, secret, nil
	}
	if id := r.PostFormValue("client_id"); id != "" {
		return id, r.PostFormValue("client_secret"), nil
	}
	return "", "", oerrors.ErrInvalidClient
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// logged logs method, path and status (never a query string or body: they
// carry codes and tokens).
func (s *Server) logged(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: 200}
		h.ServeHTTP(sw, r)
		if s.opts.Logf != nil {
			s.opts.Logf("oauthtest %s: %s %s → %d", name, r.Method, r.URL.Path, sw.code)
		}
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, code int, errCode, desc string) {
	writeJSON(w, code, map[string]string{"error": errCode, "error_description": desc})
}

func (s *Server) asHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("POST /revoke", s.revoke)
	return mux
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	m := map[string]any{
		"issuer":                                s.Issuer,
		"authorization_endpoint":                s.AuthorizeURL,
		"token_endpoint":                        s.TokenURL,
		"revocation_endpoint":                   s.RevokeURL,
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		"scopes_supported":                      s.opts.Scopes,
	}
	if s.RegisterURL != "" {
		m["registration_endpoint"] = s.RegisterURL
	}
	writeJSON(w, 200, m)
}

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html><head><title>Authorize {{.Client}}</title></head><body>
<h1>Authorize {{.Client}}</h1>
<p id="request">{{.Client}} asks for access to your account{{if .Scope}} (scope: {{.Scope}}){{end}}.</p>
<form method="post" action="/authorize">
{{range $k, $v := .Params}}<input type="hidden" name="{{$k}}" value="{{$v}}">
{{end}}<label>Signed in as <input name="subject" id="subject" value="{{.Subject}}"></label>
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form></body></html>`))

// authorize checks the client and redirect URI before anything (an error for
// an unknown client or URI is shown, never redirected), then lets go-oauth2
// check PKCE and issue the code.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", 400)
		return
	}
	cli, err := s.clients.GetByID(r.Context(), r.Form.Get("client_id"))
	if err != nil {
		http.Error(w, "unknown client_id", 400)
		return
	}
	redirect := r.Form.Get("redirect_uri")
	if redirect == "" || validateRedirect(cli.GetDomain(), redirect) != nil {
		http.Error(w, "redirect_uri is missing or not registered for this client", 400)
		return
	}
	fail := func(code, desc string) {
		u, _ := url.Parse(redirect)
		q := u.Query()
		q.Set("error", code)
		q.Set("error_description", desc)
		if st := r.Form.Get("state"); st != "" {
			q.Set("state", st)
		}
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	switch {
	case r.Form.Get("response_type") != "code":
		fail("unsupported_response_type", "response_type must be code")
		return
	case r.Form.Get("code_challenge") == "":
		fail("invalid_request", "code_challenge is required (PKCE)")
		return
	case r.Form.Get("code_challenge_method") != "S256":
		fail("invalid_request", "code_challenge_method must be S256")
		return
	}
	s.count(func(st *Stats) { st.LastResource = r.Form.Get("resource"); st.LastScope = r.Form.Get("scope") })
	if err := s.srv.HandleAuthorizeRequest(w, r); err != nil {
		http.Error(w, err.Error(), 400)
	}
}

func (s *Server) userAuthorization(w http.ResponseWriter, r *http.Request) (string, error) {
	if s.opts.AutoApprove {
		return s.opts.Subject, nil
	}
	if r.Method == http.MethodPost {
		switch r.PostFormValue("decision") {
		case "approve":
			if sub := strings.TrimSpace(r.PostFormValue("subject")); sub != "" {
				return sub, nil
			}
			return s.opts.Subject, nil
		case "deny":
			return "", oerrors.ErrAccessDenied
		}
	}
	params := map[string]string{}
	for _, k := range []string{"response_type", "client_id", "redirect_uri", "state", "scope", "code_challenge", "code_challenge_method", "resource"} {
		if v := r.Form.Get(k); v != "" {
			params[k] = v
		}
	}
	name := r.Form.Get("client_id")
	if cli, err := s.clients.GetByID(r.Context(), name); err == nil {
		if c, ok := cli.(*models.Client); ok && c.UserID != "" {
			name = c.UserID
		}
	}
	s.count(func(st *Stats) { st.ConsentPagesShown++ })
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = consentPage.Execute(w, map[string]any{"Client": name, "Scope": r.Form.Get("scope"), "Params": params, "Subject": s.opts.Subject})
	return "", nil
}

// token authenticates the client on every grant (go-oauth2 does not for
// refresh), checks a refresh token belongs to that client, and counts.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.tokenMu.Lock()
	defer s.tokenMu.Unlock()
	if err := r.ParseForm(); err != nil {
		oauthError(w, 400, "invalid_request", "bad form")
		return
	}
	s.record("code_verifier", r.PostFormValue("code_verifier"))
	id, secret, err := clientInfo(r)
	if err != nil {
		oauthError(w, 401, "invalid_client", "no client authentication")
		return
	}
	cli, err := s.clients.GetByID(r.Context(), id)
	if err != nil || cli.GetSecret() != secret {
		oauthError(w, 401, "invalid_client", "unknown client or wrong secret")
		return
	}
	grant := r.PostFormValue("grant_type")
	if grant == "refresh_token" {
		ti, err := s.manager.LoadRefreshToken(r.Context(), r.PostFormValue("refresh_token"))
		if err != nil || ti.GetClientID() != id {
			s.count(func(st *Stats) { st.RefreshFailures++ })
			oauthError(w, 400, "invalid_grant", "the refresh token is invalid, expired, revoked or already used")
			return
		}
	}
	sw := &statusWriter{ResponseWriter: w, code: 200}
	_ = s.srv.HandleTokenRequest(sw, r)
	ok := sw.code == 200
	s.count(func(st *Stats) {
		switch {
		case grant == "refresh_token" && ok:
			st.Refreshes++
		case grant == "refresh_token":
			st.RefreshFailures++
		case grant == "authorization_code" && ok:
			st.CodeExchanges++
		case grant == "client_credentials" && ok:
			st.ClientCredentials++
		}
	})
}

// register is RFC 7591 dynamic client registration.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if s.opts.DisableRegistration {
		http.NotFound(w, r)
		return
	}
	var req struct {
		RedirectURIs            []string `json:"redirect_uris"`
		ClientName              string   `json:"client_name"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		GrantTypes              []string `json:"grant_types"`
		ResponseTypes           []string `json:"response_types"`
		Scope                   string   `json:"scope"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		oauthError(w, 400, "invalid_client_metadata", "body is not JSON: "+err.Error())
		return
	}
	if len(req.RedirectURIs) == 0 {
		oauthError(w, 400, "invalid_redirect_uri", "redirect_uris is required")
		return
	}
	for _, u := range req.RedirectURIs {
		p, err := url.Parse(u)
		if err != nil || !p.IsAbs() || p.Fragment != "" || (p.Scheme != "https" && p.Scheme != "http") {
			oauthError(w, 400, "invalid_redirect_uri", fmt.Sprintf("redirect URI %q is not an absolute http(s) URI", u))
			return
		}
	}
	method := req.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic"
	}
	if method != "none" && method != "client_secret_basic" && method != "client_secret_post" {
		oauthError(w, 400, "invalid_client_metadata", "unsupported token_endpoint_auth_method "+method)
		return
	}
	if len(req.GrantTypes) == 0 {
		req.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	c := Client{ID: "dcr-" + randomString(12), RedirectURIs: req.RedirectURIs, Name: req.ClientName}
	if method != "none" {
		c.Secret = randomString(32)
	}
	s.AddClient(c)
	s.count(func(st *Stats) {
		st.Registrations++
		st.LastRegisteredNames = append(st.LastRegisteredNames, req.ClientName)
	})
	resp := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        time.Now().Unix(),
		"redirect_uris":              req.RedirectURIs,
		"token_endpoint_auth_method": method,
		"grant_types":                req.GrantTypes,
		"response_types":             []string{"code"},
	}
	if req.ClientName != "" {
		resp["client_name"] = req.ClientName
	}
	if c.Secret != "" {
		resp["client_secret"] = c.Secret
		resp["client_secret_expires_at"] = 0
	}
	writeJSON(w, http.StatusCreated, resp)
}

// revoke is RFC 7009 revocation: a refresh token takes its grant's access
// token with it.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	s.tokenMu.Lock()
	defer s.tokenMu.Unlock()
	if err := r.ParseForm(); err != nil {
		oauthError(w, 400, "invalid_request", "bad form")
		return
	}
	id, secret, err := clientInfo(r)
	if err != nil {
		oauthError(w, 401, "invalid_client", "no client authentication")
		return
	}
	if cli, err := s.clients.GetByID(r.Context(), id); err != nil || cli.GetSecret() != secret {
		oauthError(w, 401, "invalid_client", "unknown client or wrong secret")
		return
	}
	s.count(func(st *Stats) { st.Revocations++ })
	tok := r.PostFormValue("token")
	ctx := r.Context()
	if ti, err := s.manager.LoadRefreshToken(ctx, tok); err == nil && ti.GetClientID() == id {
		_ = s.tokens.RemoveByAccess(ctx, ti.GetAccess())
		_ = s.tokens.RemoveByRefresh(ctx, tok)
	} else if ti, err := s.tokens.GetByAccess(ctx, tok); err == nil && ti != nil && ti.GetClientID() == id {
		_ = s.tokens.RemoveByAccess(ctx, tok)
	}
	w.WriteHeader(200)
}
