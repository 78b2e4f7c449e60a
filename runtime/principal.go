package runtime

import "strings"

// PrincipalKind says what kind of actor a Principal is.
type PrincipalKind string

const (
	PrincipalUser      PrincipalKind = "user"
	PrincipalSession   PrincipalKind = "session"
	PrincipalSystem    PrincipalKind = "system"
	PrincipalAnonymous PrincipalKind = "anonymous"
)

// Principal is who calls a verb: a person (by cookie or token), an agent's
// session token, the server itself, or nobody yet (login, setup).
type Principal struct {
	Kind   PrincipalKind
	ID     string
	Label  string
	Access string
	// TokenID is set when a person calls through an API token.
	TokenID string
	// SessionID scopes a session token to its own session.
	SessionID string
	// TenantID is the tenant a person belongs to ("" for the operator's people).
	TenantID string
	// grants are what the Principal holds (grants.go, grants_load.go).
	grants []Grant
}

// UserPrincipal is a person acting with their access level's permissions.
func UserPrincipal(id, email, access string) Principal {
	return Principal{Kind: PrincipalUser, ID: id, Label: email, Access: access, grants: presetGrants(access, ScopeAll)}
}

// System acts for the server itself (first-start installs, reapers).
var System = Principal{Kind: PrincipalSystem, ID: "system", Label: "subako", grants: presetGrants(AccessOwner, ScopeAll)}

// Anonymous is a caller that has not signed in.
var Anonymous = Principal{Kind: PrincipalAnonymous, ID: "anonymous", Label: "anonymous"}

// Can reports whether the Principal holds a verb in some scope: what a page
// uses to show a button. Whether a call on a noun is allowed is decided by
// the one check (check.go), which also resolves the scope.
func (p Principal) Can(verb string) bool {
	for _, g := range p.grants {
		if g.Matches(verb) {
			return true
		}
	}
	return false
}

// narrowed reports whether the Principal acts through a token narrowed to
// some permissions (its grants are the token's: tokens_narrow.go).
func (p Principal) narrowed() bool {
	for _, g := range p.grants {
		if strings.HasPrefix(g.Source, "token:") {
			return true
		}
	}
	return false
}

// Grants lists what the Principal holds.
func (p Principal) Grants() []Grant { return append([]Grant(nil), p.grants...) }
