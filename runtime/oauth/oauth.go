// Package oauth is Subako's OAuth 2.1 client for vault credentials: it finds
// a resource's authorization server (RFC 9728, RFC 8414, the MCP spec's
// WWW-Authenticate hint), registers a client (RFC 7591), builds the PKCE
// authorization URL, and talks to the token endpoint (code exchange,
// refresh, client credentials), always sending the resource (RFC 8707).
//
// It stores nothing and knows no database: the runtime seals what it returns.
// It must never put a token, code, verifier or client secret in an error,
// a log line or a String form: errors carry the server's error code and
// description, and the types holding secrets print redacted.
package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Grants an OAuth credential is obtained with.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// Settings are the non-secret facts of one OAuth credential, kept as JSON
// beside it and shown on its page.
type Settings struct {
	Grant         string `json:"grant"`
	Issuer        string `json:"issuer,omitempty"`
	AuthorizeURL  string `json:"authorization_endpoint,omitempty"`
	TokenURL      string `json:"token_endpoint"`
	RevocationURL string `json:"revocation_endpoint,omitempty"`
	ClientID      string `json:"client_id"`
	Registration  string `json:"registration,omitempty"` // "dynamic" or "manual"
	Scopes        string `json:"scopes,omitempty"`       // space separated
	Resource      string `json:"resource,omitempty"`
	AuthMethod    string `json:"auth_method,omitempty"` // client_secret_basic, client_secret_post or none
	RedirectURI   string `json:"redirect_uri,omitempty"`
}

// Secrets is everything of a credential that is sealed. It prints redacted.
type Secrets struct {
	AccessToken  string `json:"access_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	Verifier     string `json:"verifier,omitempty"` // only while an authorization is pending
}

func (Secrets) String() string   { return "oauth.Secrets{redacted}" }
func (Secrets) GoString() string { return "oauth.Secrets{redacted}" }

// Token is a token endpoint's answer. ExpiresAt is zero when the server did
// not say. RefreshToken is empty when the server sent none (keep the old one).
type Token struct {
	AccessToken  string
	RefreshToken string
	ExpiresAt    time.Time
	Scope        string
}

func (Token) String() string   { return "oauth.Token{redacted}" }
func (Token) GoString() string { return "oauth.Token{redacted}" }

// NewVerifier returns a PKCE code verifier (43 characters from 32 random
// bytes) and its S256 challenge.
func NewVerifier() (verifier, challenge string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	return verifier, Challenge(verifier)
}

// Challenge is the S256 code challenge of a verifier (RFC 7636).
func Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// NewState returns an unguessable state value for one authorization.
func NewState() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// AuthURL is where the operator's browser goes to authorize: code flow,
// PKCE S256, the state and the resource.
func AuthURL(s Settings, state, challenge string) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {s.ClientID},
		"redirect_uri":          {s.RedirectURI},
		"state":                 {state},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
	}
	if s.Scopes != "" {
		q.Set("scope", s.Scopes)
	}
	if s.Resource != "" {
		q.Set("resource", s.Resource)
	}
	sep := "?"
	if strings.Contains(s.AuthorizeURL, "?") {
		sep = "&"
	}
	return s.AuthorizeURL + sep + q.Encode()
}

// Error is a failure talking to an authorization server. Code is the OAuth
// error code when the server gave one (invalid_grant, invalid_client…).
// Its message holds the endpoint, the status, the code and the server's
// description (cut short), never a request's secrets.
type Error struct {
	Step        string // "discovery", "registration", "token", "refresh"
	URL         string
	Status      int
	Code        string
	Description string
	Err         error
}

func (e *Error) Error() string {
	var b strings.Builder
	// The URL may come from a server's header or metadata: kept short.
	u := e.URL
	if len(u) > 500 {
		u = strings.ToValidUTF8(u[:500], "") + "…"
	}
	fmt.Fprintf(&b, "oauth %s at %s", e.Step, u)
	switch {
	case e.Code != "":
		fmt.Fprintf(&b, ": %s", e.Code)
		if e.Description != "" {
			fmt.Fprintf(&b, " (%s)", e.Description)
		}
	case e.Status != 0:
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
		if e.Description != "" {
			fmt.Fprintf(&b, " (%s)", e.Description)
		}
	case e.Err != nil:
		fmt.Fprintf(&b, ": %v", e.Err)
	case e.Description != "":
		fmt.Fprintf(&b, ": %s", e.Description)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// CodeNoRefreshToken is the Code of the Error Subako makes itself when a
// token ran out and the server never issued a refresh token for it.
const CodeNoRefreshToken = "no_refresh_token"

// Permanent reports whether the grant itself was refused, so retrying the
// same request cannot succeed and a person must reconnect. A network
// failure or a 5xx is not permanent.
func (e *Error) Permanent() bool {
	switch e.Code {
	case "invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope", "invalid_target", CodeNoRefreshToken:
		return true
	}
	return e.Status == 400 || e.Status == 401
}
