package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// MaxTokenLifetime bounds Token.create's expiry: a token that never expires is
// a credential nobody remembers to revoke.
const MaxTokenLifetime = 365 * 24 * time.Hour

// TokenView is an API token as listed; Token holds the secret only once, at creation.
type TokenView struct {
	ID         string     `json:"id"`
	User       string     `json:"user"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	Token      string     `json:"token,omitempty"`
	// Narrowed tokens hold only Permissions ("Noun.verb scope"), as far as
	// their holder still holds them; the others act as their holder.
	Narrowed    bool     `json:"narrowed"`
	Permissions []string `json:"permissions"`
	// Parent is the token that made this one, when a token made it.
	Parent string `json:"parent,omitempty"`
	// Tools is what /mcp offers it: "code" or "flat".
	Tools string `json:"tools"`
}

func tokenView(t models.Token) TokenView {
	return TokenView{ID: t.ID, User: t.UserID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt,
		ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt, Narrowed: t.Narrowed, Parent: t.ParentID, Permissions: []string{}, Tools: or(t.Tools, TokenToolsCode)}
}

// TokenCreateInput names a token and how long it lives ("24h", "90m", "30d").
// Permissions, when given, narrow it to those ("Noun.verb scope", a subset
// of what the caller holds); a narrowed token can only make narrowed ones.
type TokenCreateInput struct {
	Name        string   `json:"name" form:"name"`
	Expires     string   `json:"expires" form:"expires"`
	Permissions []string `json:"permissions" form:"permissions"`
	// Tools is what /mcp offers the token: "code" (search, fetch, do; the
	// default) or "flat" (one tool per verb it holds). docs/code-mode.md.
	Tools string `json:"tools" form:"tools"`
}

// ParseLifetime reads a duration with Go's units plus "d" for days.
func ParseLifetime(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 24 * time.Hour, nil
	}
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		days, err = strconv.Atoi(n)
		d = time.Duration(days) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, invalid("expires", "invalid_expires", fmt.Sprintf("expires must be a positive duration such as 24h or 30d, not %q", s))
	}
	if d > MaxTokenLifetime {
		return 0, invalid("expires", "expires_too_long", "expires must be at most 365d")
	}
	return d, nil
}

// TokenCreate is Token.create: a bearer token acting as the calling person.
func (r *Runtime) TokenCreate(ctx context.Context, p Principal, in TokenCreateInput) (TokenView, error) {
	var out TokenView
	err := r.run(ctx, p, "Token.create", func(a *act) error {
		if p.Kind != PrincipalUser {
			return forbidden("people_only", "only a person can create an API token")
		}
		if len(in.Name) > 100 {
			return invalid("name", "name_too_long", "name must be at most 100 characters")
		}
		life, err := ParseLifetime(in.Expires)
		if err != nil {
			return err
		}
		tools := strings.TrimSpace(in.Tools)
		switch tools {
		case "":
			tools = TokenToolsCode
		case TokenToolsCode, TokenToolsFlat:
		default:
			return invalid("tools", "invalid_tools", fmt.Sprintf("tools must be %q (search, fetch and do at /mcp) or %q (one MCP tool per verb); got %q", TokenToolsCode, TokenToolsFlat, truncate(tools, 40)))
		}
		parent, parentNarrowed := r.tokenNarrowed(ctx, p)
		if parentNarrowed && len(in.Permissions) == 0 {
			return invalid("permissions", "permissions_required", "this token is narrowed: a token it makes must list its permissions, a subset of this token's")
		}
		perms, err := r.narrowTo(ctx, p, in.Permissions)
		if err != nil {
			return err
		}
		secret, hash := newSecret("sbk")
		t := models.Token{ID: newID("tok"), UserID: p.ID, Name: strings.TrimSpace(in.Name), Prefix: secret[:8],
			TokenHash: hash, CreatedAt: r.now(), ExpiresAt: r.now().Add(life), Narrowed: len(perms) > 0, ParentID: p.TokenID, Tools: tools}
		// A token made by a token lives no longer than it.
		if p.TokenID != "" && parent.ID != "" && parent.ExpiresAt.Before(t.ExpiresAt) {
			t.ExpiresAt = parent.ExpiresAt
		}
		if err := r.createNarrowedToken(ctx, p, &t, perms); err != nil {
			return err
		}
		a.target(t.ID)
		out = tokenView(t)
		for _, g := range perms {
			out.Permissions = append(out.Permissions, g.Verb+" "+g.Scope.String())
		}
		out.Token = secret
		return nil
	})
	return out, err
}

// TokenList is Token.list: the caller's own live tokens.
func (r *Runtime) TokenList(ctx context.Context, p Principal) ([]TokenView, error) {
	var out []TokenView
	err := r.run(ctx, p, "Token.list", func(a *act) error {
		var ts []models.Token
		if err := r.db.WithContext(ctx).Where("user_id = ? AND revoked_at IS NULL", p.ID).Order("created_at DESC").Find(&ts).Error; err != nil {
			return err
		}
		var narrowed []string
		for _, t := range ts {
			if t.Narrowed {
				narrowed = append(narrowed, t.ID)
			}
		}
		perms, err := r.tokenPermissions(ctx, narrowed)
		if err != nil {
			return err
		}
		for _, t := range ts {
			v := tokenView(t)
			if t.Narrowed {
				v.Permissions = append(v.Permissions, perms[t.ID]...)
			}
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// TokenRevoke is Token.revoke. A person revokes their own tokens; whoever may
// remove people may also revoke anyone's but an owner's, which only owners may.
func (r *Runtime) TokenRevoke(ctx context.Context, p Principal, id string) error {
	return r.run(ctx, p, "Token.revoke", func(a *act) error {
		var t models.Token
		err := r.db.WithContext(ctx).First(&t, "id = ? AND revoked_at IS NULL", id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && t.UserID != p.ID && !p.Can("User.remove")) {
			return notFound("token", id)
		}
		if err != nil {
			return err
		}
		if t.UserID != p.ID && !p.Can("User.grant_owner") {
			var holder models.User
			if err := r.db.WithContext(ctx).First(&holder, "id = ?", t.UserID).Error; err != nil {
				return err
			}
			if holder.Access == AccessOwner {
				return denied(p, "User.grant_owner", "only an owner may revoke an owner's token")
			}
		}
		if err := r.revokeTokenAndMade(ctx, p, t); err != nil {
			return err
		}
		// Committed: the token is refused from its very next request on.
		r.auth.reset()
		return nil
	}, id)
}

// AuthenticateToken resolves a bearer token to its person; revoked, expired and
// removed people's tokens are refused.
func (r *Runtime) AuthenticateToken(ctx context.Context, secret string) (Principal, error) {
	p, t, err := r.lookupToken(ctx, hashSecret(secret))
	if err != nil {
		return p, err
	}
	// last_used_at is a hint for people tidying tokens; a minute's precision is plenty.
	if t.LastUsedAt == nil || r.now().Sub(*t.LastUsedAt) > time.Minute {
		r.touchToken(ctx, t.ID, r.now())
	}
	return p, nil
}

// lookupToken reads an API token by its hash and the person it acts as.
func (r *Runtime) lookupToken(ctx context.Context, hash string) (Principal, models.Token, error) {
	var t models.Token
	if err := r.db.WithContext(ctx).First(&t, "token_hash = ?", hash).Error; err != nil {
		return Anonymous, t, ErrUnauthenticated
	}
	if t.RevokedAt != nil || !r.now().Before(t.ExpiresAt) {
		return Anonymous, t, &Error{Kind: KindUnauthenticated, Code: "token_expired", Title: "Token expired",
			Detail: "this token has expired or was revoked: create a new one"}
	}
	var u models.User
	if err := r.db.WithContext(ctx).First(&u, "id = ?", t.UserID).Error; err != nil {
		return Anonymous, t, ErrUnauthenticated
	}
	p := r.principalFor(ctx, u, t.ID)
	return p, t, nil
}

// UserCreate makes a person directly, for `subako user add` on the server's own
// database. Without a password it returns a one-time link instead.
func (r *Runtime) UserCreate(ctx context.Context, p Principal, email, access, password string) (UserView, InviteView, error) {
	var out UserView
	if password == "" {
		inv, err := r.UserInvite(ctx, p, email, access)
		return out, inv, err
	}
	err := r.run(ctx, p, "User.invite", func(a *act) error {
		email, err := checkEmail(email)
		if err != nil {
			return err
		}
		if !ValidAccess(access) {
			return invalid("access", "invalid_access", "access must be one of "+accessChoices)
		}
		if access == AccessOwner && !p.Can("User.grant_owner") {
			return denied(p, "User.grant_owner", "only an owner may add an owner")
		}
		hash, err := hashPassword(password)
		if err != nil {
			return err
		}
		var n int64
		r.db.WithContext(ctx).Model(&models.User{}).Where("email = ?", email).Count(&n)
		if n > 0 {
			return invalid("email", "email_taken", email+" already has access")
		}
		u := models.User{ID: newID("usr"), Email: email, Access: access, PasswordHash: hash, CreatedAt: r.now(), UpdatedAt: r.now()}
		a.target(u.ID)
		out = userView(u)
		return r.db.WithContext(ctx).Create(&u).Error
	})
	return out, InviteView{}, err
}

// PrincipalForEmail is the person with that email, for offline CLI commands
// that act as them (`subako token create --email`).
func (r *Runtime) PrincipalForEmail(ctx context.Context, email string) (Principal, error) {
	var u models.User
	if err := r.db.WithContext(ctx).First(&u, "email = ?", strings.ToLower(strings.TrimSpace(email))).Error; err != nil {
		return Anonymous, notFound("user with email", email)
	}
	return r.principalFor(ctx, u, ""), nil
}

// MetricsAllowed tells whether a bearer token may read /metrics: a person's
// token at owner or admin access (the figures describe the whole server).
// It is not an Action: a scraper reads every few seconds and would bury the
// audit log.
func (r *Runtime) MetricsAllowed(ctx context.Context, secret string) bool {
	p, err := r.AuthenticateToken(ctx, secret)
	return err == nil && (p.Access == AccessOwner || p.Access == AccessAdmin)
}
