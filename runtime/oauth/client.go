package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// maxAnswer is the most read from any authorization server answer.
const maxAnswer = 1 << 20

// maxExpiresIn is the longest lifetime of an access token taken at its word.
const maxExpiresIn = 365 * 24 * time.Hour

// Client talks to authorization servers over HTTP (give it the egress
// guard's transport). Now is the clock expiries are computed against.
// AllowHTTP lets an authorization server's issuer and endpoints be plain
// http (the runtime sets it with --egress-allow-private, for servers on
// loopback or a private network); otherwise they must be https (OAuth 2.1
// section 1.5), since codes, tokens and client secrets go there and the
// person's browser is sent to the authorization endpoint.
type Client struct {
	HTTP      *http.Client
	Now       func() time.Time
	AllowHTTP bool
}

// endpointOK checks an authorization server URL from metadata or a person:
// absolute, https (or http when allowed), no user info.
func (c *Client) endpointOK(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && c.AllowHTTP)
}

func (c *Client) schemes() string {
	if c.AllowHTTP {
		return "an absolute http(s) URL"
	}
	return "an absolute https URL"
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Metadata is what discovery learned about a resource and its
// authorization server.
type Metadata struct {
	Resource              string
	ScopesSupported       []string
	Issuer                string
	AuthorizationEndpoint string
	TokenEndpoint         string
	RegistrationEndpoint  string
	RevocationEndpoint    string
	AuthMethods           []string
}

type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

type serverMetadata struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	RegistrationEndpoint  string   `json:"registration_endpoint"`
	RevocationEndpoint    string   `json:"revocation_endpoint"`
	AuthMethods           []string `json:"token_endpoint_auth_methods_supported"`
	ChallengeMethods      []string `json:"code_challenge_methods_supported"`
	ScopesSupported       []string `json:"scopes_supported"`
}

// Discover finds the authorization server of a protected resource: its
// protected-resource metadata (RFC 9728) at the well-known path, else where
// a 401's WWW-Authenticate resource_metadata points (the MCP spec), else the
// resource's own origin as the issuer; then that issuer's RFC 8414 metadata.
func (c *Client) Discover(ctx context.Context, resource string) (Metadata, error) {
	u, err := url.Parse(resource)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Metadata{}, &Error{Step: "discovery", URL: resource, Description: "the prefix is not an absolute http(s) URL"}
	}
	md := Metadata{Resource: resource}
	prm, err := c.resourceMetadata(ctx, u)
	if err != nil {
		return md, err
	}
	issuer := origin(u)
	if prm != nil {
		if len(prm.AuthorizationServers) == 0 {
			return md, &Error{Step: "discovery", URL: resource, Description: "the protected-resource metadata names no authorization_servers"}
		}
		issuer = prm.AuthorizationServers[0]
		md.ScopesSupported = prm.ScopesSupported
		if prm.Resource != "" {
			// RFC 9728 section 3.3: metadata naming another resource must not be
			// used, or a server could have Subako ask, with the person's consent,
			// for tokens meant for someone else's resource and then receive them.
			if !covers(prm.Resource, u) {
				return md, &Error{Step: "discovery", URL: resource, Description: fmt.Sprintf(
					"the protected-resource metadata names the resource %q, which is not this URL or a parent of it (RFC 9728 section 3.3)", cut(prm.Resource))}
			}
			md.Resource = prm.Resource // the identifier the server expects in `resource`
		}
	}
	sm, err := c.serverMetadata(ctx, issuer)
	if err != nil {
		return md, err
	}
	md.Issuer, md.AuthorizationEndpoint, md.TokenEndpoint = sm.Issuer, sm.AuthorizationEndpoint, sm.TokenEndpoint
	md.RegistrationEndpoint, md.RevocationEndpoint, md.AuthMethods = sm.RegistrationEndpoint, sm.RevocationEndpoint, sm.AuthMethods
	if len(md.ScopesSupported) == 0 {
		md.ScopesSupported = sm.ScopesSupported
	}
	return md, nil
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

// covers reports whether the resource identifier res is the URL u or a
// parent of it: same scheme and host, and u's path under res's path.
func covers(res string, u *url.URL) bool {
	r, err := url.Parse(res)
	if err != nil || r.User != nil || !strings.EqualFold(r.Scheme, u.Scheme) || !strings.EqualFold(r.Host, u.Host) {
		return false
	}
	rp, up := strings.TrimSuffix(r.EscapedPath(), "/"), strings.TrimSuffix(u.EscapedPath(), "/")
	return rp == "" || up == rp || strings.HasPrefix(up, rp+"/")
}

func (c *Client) resourceMetadata(ctx context.Context, u *url.URL) (*resourceMetadata, error) {
	base := origin(u) + "/.well-known/oauth-protected-resource"
	tries := []string{}
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		tries = append(tries, base+p)
	}
	tries = append(tries, base)
	if hint := c.metadataHint(ctx, u); hint != "" {
		tries = append([]string{hint}, tries...)
	}
	for _, t := range tries {
		var m resourceMetadata
		found, err := c.getJSON(ctx, "discovery", t, &m)
		if err != nil {
			return nil, err
		}
		if found {
			return &m, nil
		}
	}
	return nil, nil
}

// metadataHint asks the resource itself, unauthenticated, and reads the
// resource_metadata parameter of its 401's WWW-Authenticate header.
func (c *Client) metadataHint(ctx context.Context, u *url.URL) string {
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(body))
	if err != nil {
		return ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return ""
	}
	_, _ = io.CopyN(io.Discard, resp.Body, 4096)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return ""
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if v := authParam(h, "resource_metadata"); v != "" {
			if hu, err := url.Parse(v); err == nil && (hu.Scheme == "https" || hu.Scheme == "http") && hu.Host != "" {
				return v
			}
		}
	}
	return ""
}

// authParam reads one auth-param (name="value" or name=value) of a
// WWW-Authenticate challenge.
func authParam(header, name string) string {
	i := strings.Index(strings.ToLower(header), name+"=")
	if i < 0 {
		return ""
	}
	rest := header[i+len(name)+1:]
	if strings.HasPrefix(rest, `"`) {
		if end := strings.Index(rest[1:], `"`); end >= 0 {
			return rest[1 : end+1]
		}
		return ""
	}
	if end := strings.IndexAny(rest, ", "); end >= 0 {
		return rest[:end]
	}
	return rest
}

func (c *Client) serverMetadata(ctx context.Context, issuer string) (serverMetadata, error) {
	var sm serverMetadata
	iu, err := url.Parse(issuer)
	if err != nil || !c.endpointOK(issuer) {
		return sm, &Error{Step: "discovery", URL: cut(issuer), Description: "the authorization server is not " + c.schemes()}
	}
	p := strings.TrimSuffix(iu.EscapedPath(), "/")
	tries := []string{origin(iu) + "/.well-known/oauth-authorization-server" + p, origin(iu) + "/.well-known/openid-configuration" + p}
	if p != "" {
		tries = append(tries, origin(iu)+p+"/.well-known/openid-configuration")
	}
	for _, t := range tries {
		found, err := c.getJSON(ctx, "discovery", t, &sm)
		if err != nil {
			return sm, err
		}
		if !found {
			continue
		}
		if strings.TrimSuffix(sm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return sm, &Error{Step: "discovery", URL: t, Description: fmt.Sprintf("the metadata's issuer %q is not %q (RFC 8414 section 3.3)", cut(sm.Issuer), issuer)}
		}
		if err := c.checkEndpoints(t, sm); err != nil {
			return sm, err
		}
		return sm, nil
	}
	return sm, &Error{Step: "discovery", URL: tries[0], Description: "no authorization server metadata found (RFC 8414); enter the server's details or check the URL"}
}

func (c *Client) checkEndpoints(at string, sm serverMetadata) error {
	for _, e := range []struct{ name, v string }{{"authorization_endpoint", sm.AuthorizationEndpoint}, {"token_endpoint", sm.TokenEndpoint},
		{"registration_endpoint", sm.RegistrationEndpoint}, {"revocation_endpoint", sm.RevocationEndpoint}} {
		if e.v == "" && (e.name == "registration_endpoint" || e.name == "revocation_endpoint") {
			continue
		}
		if !c.endpointOK(e.v) || len(e.v) > 2048 {
			return &Error{Step: "discovery", URL: at, Description: "the metadata's " + e.name + " is missing or not " + c.schemes()}
		}
	}
	if len(sm.ChallengeMethods) > 0 && !slices.Contains(sm.ChallengeMethods, "S256") {
		return &Error{Step: "discovery", URL: at, Description: "the server does not support PKCE with S256, which OAuth 2.1 requires"}
	}
	return nil
}

// getJSON fetches a metadata document; found is false for a 404 or 405, or
// for anything that is not JSON (a page served at every path).
func (c *Client) getJSON(ctx context.Context, step, u string, into any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, &Error{Step: step, URL: u, Err: err}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return false, &Error{Step: step, URL: u, Err: unwrapURL(err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode != http.StatusOK {
		return false, nil
	}
	if err := json.Unmarshal(body, into); err != nil {
		return false, nil
	}
	return true, nil
}

// Registration is a client registered with RFC 7591.
type Registration struct {
	ClientID     string
	ClientSecret string
	AuthMethod   string
}

func (Registration) String() string { return "oauth.Registration{redacted}" }

// Register registers Subako as a client with the redirect URI; it asks for
// a public client (PKCE), and keeps a secret if the server issues one.
func (c *Client) Register(ctx context.Context, md Metadata, redirectURI, scopes string) (Registration, error) {
	in := map[string]any{
		"client_name":                "Subako",
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	if scopes != "" {
		in["scope"] = scopes
	}
	if !c.endpointOK(md.RegistrationEndpoint) {
		return Registration{}, &Error{Step: "registration", URL: cut(md.RegistrationEndpoint), Description: "the registration endpoint is not " + c.schemes()}
	}
	b, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.RegistrationEndpoint, bytes.NewReader(b))
	if err != nil {
		return Registration{}, &Error{Step: "registration", URL: md.RegistrationEndpoint, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
	}
	if err := c.do(req, "registration", &out); err != nil {
		return Registration{}, err
	}
	if out.ClientID == "" {
		return Registration{}, &Error{Step: "registration", URL: md.RegistrationEndpoint, Description: "the answer has no client_id"}
	}
	// The client id is shown on the vault page and sent in URLs: a server's
	// megabyte or control characters are refused, as a person's would be.
	if len(out.ClientID) > 256 || strings.ContainsFunc(out.ClientID, unicode.IsControl) || len(out.ClientSecret) > 8192 {
		return Registration{}, &Error{Step: "registration", URL: md.RegistrationEndpoint,
			Description: "the answer's client_id is longer than 256 characters or holds control characters, or its client_secret is longer than 8192"}
	}
	r := Registration{ClientID: out.ClientID, ClientSecret: out.ClientSecret, AuthMethod: out.AuthMethod}
	switch {
	case r.ClientSecret == "":
		r.AuthMethod = "none"
	case r.AuthMethod == "" || r.AuthMethod == "none":
		r.AuthMethod = "client_secret_basic"
	}
	return r, nil
}

// Exchange trades an authorization code and its PKCE verifier for tokens.
func (c *Client) Exchange(ctx context.Context, s Settings, clientSecret, code, verifier string) (Token, error) {
	return c.token(ctx, "token", s, clientSecret, url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {s.RedirectURI}})
}

// Refresh uses a refresh token. A returned Token with no RefreshToken means
// the server did not rotate it.
func (c *Client) Refresh(ctx context.Context, s Settings, clientSecret, refreshToken string) (Token, error) {
	return c.token(ctx, "refresh", s, clientSecret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

// ClientCredentials gets a token for the client itself (machine to machine).
func (c *Client) ClientCredentials(ctx context.Context, s Settings, clientSecret string) (Token, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if s.Scopes != "" {
		form.Set("scope", s.Scopes)
	}
	return c.token(ctx, "token", s, clientSecret, form)
}

// AuthMethodFor picks how to present a client secret: basic unless the
// server lists only client_secret_post; none without a secret.
func AuthMethodFor(secret string, supported []string) string {
	switch {
	case secret == "":
		return "none"
	case len(supported) > 0 && !slices.Contains(supported, "client_secret_basic") && slices.Contains(supported, "client_secret_post"):
		return "client_secret_post"
	}
	return "client_secret_basic"
}

func (c *Client) token(ctx context.Context, step string, s Settings, secret string, form url.Values) (Token, error) {
	if !c.endpointOK(s.TokenURL) {
		return Token{}, &Error{Step: step, URL: cut(s.TokenURL), Description: "the token endpoint is not " + c.schemes()}
	}
	if s.Resource != "" {
		form.Set("resource", s.Resource)
	}
	basic := secret != "" && s.AuthMethod != "client_secret_post"
	switch {
	case basic:
	case secret != "":
		form.Set("client_id", s.ClientID)
		form.Set("client_secret", secret)
	default:
		form.Set("client_id", s.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, &Error{Step: step, URL: s.TokenURL, Err: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 section 2.3.1: both parts form-encoded before base64.
		req.SetBasicAuth(url.QueryEscape(s.ClientID), url.QueryEscape(secret))
	}
	// A server may echo the request in its error (error_description
	// "invalid refresh token rt-…"): what it echoes is cut out before the
	// text reaches a page, a log line, the credential's status or a tool.
	secrets := []string{secret, form.Get("code"), form.Get("code_verifier"), form.Get("refresh_token"), form.Get("client_secret"),
		strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")}
	var out struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		ExpiresIn    json.RawMessage `json:"expires_in"`
		RefreshToken string          `json:"refresh_token"`
		Scope        string          `json:"scope"`
	}
	if err := c.do(req, step, &out, secrets...); err != nil {
		return Token{}, err
	}
	if out.AccessToken == "" {
		return Token{}, &Error{Step: step, URL: s.TokenURL, Description: "the answer has no access_token"}
	}
	if out.TokenType != "" && !strings.EqualFold(out.TokenType, "bearer") {
		return Token{}, &Error{Step: step, URL: s.TokenURL, Description: fmt.Sprintf("token_type %q is not Bearer", cut(out.TokenType))}
	}
	t := Token{AccessToken: out.AccessToken, RefreshToken: out.RefreshToken, Scope: out.Scope}
	if secs, err := strconv.ParseFloat(strings.Trim(string(out.ExpiresIn), `"`), 64); err == nil && secs > 0 {
		// A huge expires_in would overflow time.Duration into the past (and
		// refresh at every call): a year is as long as Subako believes.
		secs = min(secs, maxExpiresIn.Seconds())
		t.ExpiresAt = c.now().Add(time.Duration(secs * float64(time.Second)))
	}
	return t, nil
}

// do sends a request and decodes a 2xx JSON answer into out, or turns an
// error answer into an *Error with the OAuth error code, with any of the
// request's secrets the server echoed in it cut out.
func (c *Client) do(req *http.Request, step string, out any, secrets ...string) error {
	u := req.URL.String()
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return &Error{Step: step, URL: u, Err: unwrapURL(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return &Error{Step: step, URL: u, Status: resp.StatusCode, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e struct {
			Code        string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &e)
		return &Error{Step: step, URL: u, Status: resp.StatusCode, Code: cut(redact(e.Code, secrets)), Description: cut(redact(e.Description, secrets))}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &Error{Step: step, URL: u, Status: resp.StatusCode, Description: "the answer is not JSON"}
	}
	return nil
}

// redact replaces every secret in s, as sent or URL-encoded, with [redacted].
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v == "" {
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			s = strings.ReplaceAll(s, form, "[redacted]")
		}
	}
	return s
}

// cut keeps a server's text short and printable before it reaches a page.
func cut(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// unwrapURL drops *url.Error's repetition of the URL (with its query).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
