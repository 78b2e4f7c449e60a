package vault

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The credential types: what the credential puts on a request.
const (
	TypeBearer = "bearer" // Authorization: Bearer <secret>
	TypeHeader = "header" // <HeaderName>: <secret>
	TypeBasic  = "basic"  // Authorization: Basic base64(<Username>:<secret>)
)

// Limits a user can reach; the errors that enforce them name them.
const (
	MaxPrefixLen     = 2048
	MaxHeaderNameLen = 128
	MaxUsernameLen   = 256
	MaxSecretLen     = 8192
)

// refusedHeaders describe the connection or the framing of the message rather
// than the caller: a credential set there would be dropped by a proxy or would
// corrupt the request.
var refusedHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Host": true, "Content-Length": true,
}

// Credential says where a secret goes and how it is presented. It never holds
// the secret itself: that is stored sealed and handed to Apply when needed.
type Credential struct {
	ID         string
	Prefix     string // the URL prefix the credential is bound to
	Type       string // TypeBearer, TypeHeader or TypeBasic
	HeaderName string // TypeHeader only
	Username   string // TypeBasic only
}

// FieldError is a mistake in one field of a credential. Field uses the API's
// JSON names (prefix, type, header_name, username, secret).
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return "vault: credential " + e.Field + ": " + e.Detail }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Validate checks everything a user chose about a credential except its
// secret. The first mistake found is returned as a *FieldError.
func (c Credential) Validate() error {
	if _, err := parsePrefix(c.Prefix); err != nil {
		return err
	}
	switch c.Type {
	case TypeBearer, TypeBasic, TypeHeader:
	default:
		return fieldErr("type", "must be %s, %s or %s, not %q", TypeBearer, TypeHeader, TypeBasic, c.Type)
	}
	if err := c.validateHeaderName(); err != nil {
		return err
	}
	return c.validateUsername()
}

func (c Credential) validateHeaderName() error {
	if c.Type != TypeHeader {
		if c.HeaderName != "" {
			return fieldErr("header_name", "is only for type %s", TypeHeader)
		}
		return nil
	}
	switch name := c.HeaderName; {
	case name == "":
		return fieldErr("header_name", "is required for type %s", TypeHeader)
	case len(name) > MaxHeaderNameLen:
		return fieldErr("header_name", "must be at most %d characters, got %d", MaxHeaderNameLen, len(name))
	case !httpguts.ValidHeaderFieldName(name):
		return fieldErr("header_name", "%q is not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", name)
	case refusedHeaders[textproto.CanonicalMIMEHeaderKey(name)]:
		return fieldErr("header_name", "%q describes the connection, not the caller; pick another header", name)
	}
	return nil
}

func (c Credential) validateUsername() error {
	if c.Type != TypeBasic {
		if c.Username != "" {
			return fieldErr("username", "is only for type %s", TypeBasic)
		}
		return nil
	}
	switch u := c.Username; {
	case u == "":
		return fieldErr("username", "is required for type %s", TypeBasic)
	case len(u) > MaxUsernameLen:
		return fieldErr("username", "must be at most %d characters, got %d", MaxUsernameLen, len(u))
	case strings.Contains(u, ":"):
		// RFC 7617: the first colon separates user from password.
		return fieldErr("username", "must not contain ':'")
	case hasControl(u):
		return fieldErr("username", "must not contain control characters")
	}
	return nil
}

// ValidateSecret checks a secret before it is sealed, so that a secret Apply
// cannot send is refused when it is set, not when a tool call fails.
func ValidateSecret(secret string) error {
	switch {
	case secret == "":
		return fieldErr("secret", "is required")
	case len(secret) > MaxSecretLen:
		return fieldErr("secret", "must be at most %d bytes, got %d", MaxSecretLen, len(secret))
	case hasControl(secret):
		return fieldErr("secret", "must not contain control characters or line breaks")
	case strings.TrimSpace(secret) != secret:
		return fieldErr("secret", "must not start or end with spaces")
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// Apply puts the credential on req, replacing any value the header already
// had. A credential of an unknown type adds nothing; Validate refuses such a
// credential before it is stored.
func Apply(req *http.Request, c Credential, secret string) {
	switch c.Type {
	case TypeBearer:
		req.Header.Set("Authorization", "Bearer "+secret)
	case TypeHeader:
		req.Header.Set(c.HeaderName, secret)
	case TypeBasic:
		req.SetBasicAuth(c.Username, secret)
	}
}
