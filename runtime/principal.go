package runtime

import "slices"

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
	SessionID   string
	permissions []string
}

// UserPrincipal is a person acting with their access level's permissions.
func UserPrincipal(id, email, access string) Principal {
	return Principal{Kind: PrincipalUser, ID: id, Label: email, Access: access, permissions: presets[access]}
}

// System acts for the server itself (first-start installs, reapers).
var System = Principal{Kind: PrincipalSystem, ID: "system", Label: "subako", permissions: presets[AccessOwner]}

// Anonymous is a caller that has not signed in.
var Anonymous = Principal{Kind: PrincipalAnonymous, ID: "anonymous", Label: "anonymous"}

// Can reports whether the Principal holds a permission. This is the only place
// a permission is decided.
func (p Principal) Can(permission string) bool {
	_, found := slices.BinarySearch(p.permissions, permission)
	return found
}
