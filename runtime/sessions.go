package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Session states.
const (
	SessionActive = "active"
	SessionEnded  = "ended"
)

// sessionVerbs are what an agent holding a session token may do, in its own session only.
var sessionVerbs = concat([]string{
	"Session.get", "Session.tools", "ToolCall.create", "ToolCall.get", "ToolCall.list", "ToolCall.complete", "ToolCall.cancel",
	"Resource.read", "Prompt.get",
	"Client.connect", "ClientCall.next",
	"Volume.list", "Volume.get", "Volume.put", "Volume.delete",
	// Code mode's `do` (sessioncode_do.go): each $ call inside is a
	// ToolCall.create checked on its own.
	"Program.run",
})

// SessionPrincipal is an agent acting through a session's token.
func SessionPrincipal(sessionID, title string) Principal {
	label := "session " + sessionID
	if title != "" {
		label = "session " + title
	}
	return Principal{Kind: PrincipalSession, ID: sessionID, Label: label, SessionID: sessionID, grants: sessionGrants(sessionID)}
}

// SessionView is a session as interfaces show it; Token only at creation.
type SessionView struct {
	ID          string     `json:"id"`
	Title       string     `json:"title"`
	Version     string     `json:"version"`
	Agent       string     `json:"agent"`
	State       string     `json:"state"`
	Vaults      []string   `json:"vaults"`
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	EndedAt     *time.Time `json:"ended_at"`
	Token       string     `json:"token,omitempty"`
	MCPEndpoint string     `json:"mcp_endpoint"`
	// AgentName and VersionNumber are filled by Session.list, read in the
	// same query as the sessions.
	AgentName     string `json:"agent_name,omitempty"`
	VersionNumber int    `json:"version_number,omitempty"`
	// TokenExpiresAt is when the agent token stops working, if before the session ends.
	TokenExpiresAt *time.Time `json:"token_expires_at"`
	// Tenant is the tenant holding the session ("" for the operator's).
	Tenant string `json:"tenant"`
}

// SessionCreateInput binds a published version to vaults.
type SessionCreateInput struct {
	Version string   `json:"version"`
	Vaults  []string `json:"vaults"`
	Title   string   `json:"title"`
	// TokenExpires ends the agent token this long after the session starts
	// ("2h", "30d"), before the session ends; empty: when the session ends.
	TokenExpires string `json:"token_expires" form:"token_expires"`
	// Tenant (an id or name) holds the session; a tenant's person's
	// sessions are always their own tenant's (tenants.go).
	Tenant string `json:"tenant"`
}

// SessionCreate is Session.create: the answer carries the session token, which
// acts only on this session's tool verbs and stops working when it ends.
func (r *Runtime) SessionCreate(ctx context.Context, p Principal, in SessionCreateInput) (SessionView, error) {
	var out SessionView
	err := r.run(ctx, p, "Session.create", func(a *act) error {
		if err := checkTitle("title", in.Title); err != nil {
			return err
		}
		v, err := r.loadVersion(ctx, in.Version)
		if err != nil {
			return &Error{Kind: KindInvalid, Code: "unknown_version", Title: "Invalid input", Field: "version",
				Detail: fmt.Sprintf("no version %q", in.Version), Fields: []FieldError{{Field: "version", Code: "unknown_version", Detail: "no such version"}}}
		}
		if v.State != StatePublished {
			return conflict("version_not_published", fmt.Sprintf("version %d is a draft: publish it before a session runs it", v.Number))
		}
		tenant, err := r.tenantFor(ctx, p, "tenant", in.Tenant)
		if err != nil {
			return err
		}
		var vaultIDs []string
		for i, ref := range in.Vaults {
			vlt, err := r.loadVault(ctx, ref)
			if err != nil {
				return invalid(fmt.Sprintf("vaults[%d]", i), "unknown_vault", fmt.Sprintf("no vault %q", ref))
			}
			if err := sessionVaultTenant(fmt.Sprintf("vaults[%d]", i), vlt, tenant); err != nil {
				return err
			}
			// Binding a vault uses its credentials: Vault.use on it (check.go).
			if err := r.require(ctx, p, "Vault.use", vlt.ID); err != nil {
				return err
			}
			if slices.Contains(vaultIDs, vlt.ID) {
				return invalid(fmt.Sprintf("vaults[%d]", i), "duplicate_vault", fmt.Sprintf("vault %q is listed twice", vlt.Name))
			}
			vaultIDs = append(vaultIDs, vlt.ID)
		}
		tokenExpires, err := sessionTokenExpiry(r.now(), in.TokenExpires)
		if err != nil {
			return err
		}
		token, hash := newSecret("sbs")
		s := models.Session{TokenExpiresAt: tokenExpires, ID: newID("ses"), VersionID: v.ID, AgentID: v.AgentID, Title: strings.TrimSpace(in.Title),
			State: SessionActive, TokenHash: hash, CreatedBy: p.ID, CreatedAt: r.now(), TenantID: tenant}
		a.target(s.ID, v.ID)
		a.version = v.ID
		err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&s).Error; err != nil {
				return err
			}
			for i, id := range vaultIDs {
				if err := tx.Create(&models.SessionVault{SessionID: s.ID, VaultID: id, Position: i}).Error; err != nil {
					return err
				}
			}
			return nil
		})
		out = sessionView(s, vaultIDs)
		out.Token = token
		return err
	})
	return out, err
}

func checkTitle(field, t string) error {
	if n := utf8.RuneCountInString(strings.TrimSpace(t)); n > 200 {
		return invalid(field, "title_too_long", fmt.Sprintf("%s must be at most 200 characters; it has %d", field, n))
	}
	return nil
}

func sessionView(s models.Session, vaults []string) SessionView {
	if vaults == nil {
		vaults = []string{}
	}
	return SessionView{ID: s.ID, Title: s.Title, Version: s.VersionID, Agent: s.AgentID, State: s.State, Vaults: vaults,
		CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt, EndedAt: s.EndedAt, MCPEndpoint: "/mcp/sessions/" + s.ID, Tenant: s.TenantID,
		TokenExpiresAt: s.TokenExpiresAt}
}

func (r *Runtime) loadSession(ctx context.Context, p Principal, id string) (models.Session, error) {
	var s models.Session
	// A session token reaches its own session and no other; to it, others do not exist.
	if p.Kind == PrincipalSession && p.SessionID != id {
		return s, &Error{Kind: KindForbidden, Code: "other_session", Title: "Wrong session",
			Detail: "this session token belongs to another session"}
	}
	err := r.db.WithContext(ctx).First(&s, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return s, notFound("session", id)
	}
	return s, err
}

func (r *Runtime) sessionVaults(ctx context.Context, id string) []string {
	var ids []string
	r.db.WithContext(ctx).Model(&models.SessionVault{}).Where("session_id = ?", id).Order("position").Pluck("vault_id", &ids)
	return ids
}

// SessionGet is Session.get.
func (r *Runtime) SessionGet(ctx context.Context, p Principal, id string) (SessionView, error) {
	var out SessionView
	err := r.run(ctx, p, "Session.get", func(a *act) error {
		s, err := r.loadSession(ctx, p, id)
		out = sessionView(s, r.sessionVaults(ctx, id))
		return err
	}, id)
	return out, err
}

// SessionFilter narrows Session.list; Cursor and Limit page it (lists.go).
type SessionFilter struct {
	Agent  string `query:"agent" json:"agent"`
	State  string `query:"state" json:"state"`
	Cursor string `query:"cursor" json:"cursor"`
	Limit  int    `query:"limit" json:"limit"`
}

// SessionList is Session.list, newest first: its first 200 sessions unless
// f.Limit or f.Cursor say otherwise.
func (r *Runtime) SessionList(ctx context.Context, p Principal, f SessionFilter) ([]SessionView, error) {
	pg, err := r.SessionListPage(ctx, p, f, 200)
	return pg.Items, err
}

// SessionEnd is Session.end: its token stops working, waiting calls are refused.
func (r *Runtime) SessionEnd(ctx context.Context, p Principal, id string) (SessionView, error) {
	var out SessionView
	err := r.run(ctx, p, "Session.end", func(a *act) error {
		s, err := r.loadSession(ctx, p, id)
		if err != nil {
			return err
		}
		if s.State == SessionEnded {
			return conflict("session_ended", "the session has already ended")
		}
		now := r.now()
		err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Model(&s).Updates(map[string]any{"state": SessionEnded, "ended_at": now}).Error; err != nil {
				return err
			}
			return r.refuseOpenCalls(tx, "session_id = ?", []any{id}, "the session ended")
		})
		if err != nil {
			return err
		}
		s.State, s.EndedAt = SessionEnded, &now
		out = sessionView(s, r.sessionVaults(ctx, id))
		// Committed: its token is refused from its very next request on.
		r.auth.reset()
		r.publish(Event{Kind: "session", ID: id, SessionID: id, State: SessionEnded})
		// Its upstream MCP sessions serve nobody now: end them rather than
		// hold a connection each until the pool's idle timer.
		r.mcp.Forget(mcpPoolKey(id, ""))
		return nil
	}, id)
	return out, err
}

// AuthenticateSessionToken resolves an agent's session token; an ended
// session's token is refused.
func (r *Runtime) AuthenticateSessionToken(ctx context.Context, secret string) (Principal, error) {
	var s models.Session
	if err := r.db.WithContext(ctx).First(&s, "token_hash = ?", hashSecret(secret)).Error; err != nil {
		return Anonymous, ErrUnauthenticated
	}
	if s.State != SessionActive {
		return Anonymous, &Error{Kind: KindUnauthenticated, Code: "session_ended", Title: "Session ended",
			Detail: "this session has ended: its token no longer works"}
	}
	if err := r.sessionTokenExpired(s); err != nil {
		return Anonymous, err
	}
	return SessionPrincipal(s.ID, s.Title), nil
}

// Authenticate resolves any bearer token: a person's API token or a session's.
func (r *Runtime) Authenticate(ctx context.Context, secret string) (Principal, error) {
	return r.authenticateCached(ctx, secret)
}

// AuthorizeSession checks that p may reach a session at all, for transports
// (the MCP endpoint) whose every HTTP request is not an action of its own: the
// verbs they carry (Session.tools, ToolCall.create) are checked and recorded.
func (r *Runtime) AuthorizeSession(ctx context.Context, p Principal, id string) error {
	if !p.Can("Session.get") {
		return denied(p, "Session.get", "")
	}
	s, err := r.loadSession(ctx, p, id)
	if err == nil && s.State != SessionActive {
		return conflict("session_ended", "the session has ended")
	}
	return err
}
