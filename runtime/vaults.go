package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/runtime/vault"
)

// VaultView is a vault with its credentials, never their secrets.
type VaultView struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	CreatedAt   time.Time        `json:"created_at"`
	Credentials []CredentialView `json:"credentials"`

	// Tenant is the tenant holding the vault ("" for the operator's).
	Tenant string `json:"tenant"`
}

// CredentialView shows that a secret is set and when it was last used, never its value.
type CredentialView struct {
	ID         string     `json:"id"`
	Vault      string     `json:"vault"`
	Prefix     string     `json:"prefix"`
	Type       string     `json:"type"`
	HeaderName string     `json:"header_name,omitempty"`
	Username   string     `json:"username,omitempty"`
	SecretSet  bool       `json:"secret_set"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	// OAuth credentials only (vault_oauth.go): "connected" or
	// "needs_reconnecting", why, and the current access token's expiry.
	Status       string     `json:"status,omitempty"`
	StatusDetail string     `json:"status_detail,omitempty"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	RefreshedAt  *time.Time `json:"refreshed_at,omitempty"`
	TokenURL     string     `json:"token_url,omitempty"`
	ClientID     string     `json:"client_id,omitempty"`
	Scopes       string     `json:"scopes,omitempty"`
	Issuer       string     `json:"issuer,omitempty"`
	Registration string     `json:"registration,omitempty"`
}

func credentialView(c models.Credential) CredentialView {
	v := CredentialView{ID: c.ID, Vault: c.VaultID, Prefix: c.Prefix, Type: c.Type, HeaderName: c.HeaderName,
		Username: c.Username, SecretSet: len(c.Ciphertext) > 0, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, LastUsedAt: c.LastUsedAt}
	oauthView(&v, c)
	return v
}

// VaultInput creates a vault.
type VaultInput struct {
	Name        string `json:"name" form:"name"`
	Description string `json:"description" form:"description"`
	// Tenant (an id or name) holds the vault; a tenant's person's vaults
	// are always their own tenant's (tenants.go).
	Tenant string `json:"tenant" form:"tenant"`
}

// VaultCreate is Vault.create.
func (r *Runtime) VaultCreate(ctx context.Context, p Principal, in VaultInput) (VaultView, error) {
	var out VaultView
	err := r.run(ctx, p, "Vault.create", func(a *act) error {
		name := strings.TrimSpace(in.Name)
		// New vault names follow the grant-name rules (a-z, 0-9, -, 1 to 32),
		// so a name reads the same in a config, a URL and a log line; an
		// underscore is refused, so a name can never look like a vlt_ id.
		// Vaults made before keep their names: only creation checks.
		if errs := tools.CheckName(tools.KindMCP, name, nil); len(errs) > 0 {
			return invalid("name", errs[0].Code, errs[0].Detail)
		}
		if utf8.RuneCountInString(in.Description) > 2000 {
			return invalid("description", "description_too_long", "description must be at most 2,000 characters")
		}
		var n int64
		r.db.WithContext(ctx).Model(&models.Vault{}).Where("LOWER(name) = LOWER(?)", name).Count(&n)
		if n > 0 {
			return &Error{Kind: KindConflict, Code: "name_taken", Title: "Name taken", Field: "name", Detail: "another vault already has this name",
				Fields: []FieldError{{Field: "name", Code: "name_taken", Detail: "another vault already has this name"}}}
		}
		tenant, err := r.tenantFor(ctx, p, "tenant", in.Tenant)
		if err != nil {
			return err
		}
		v := models.Vault{ID: newID("vlt"), Name: name, Description: strings.TrimSpace(in.Description), CreatedBy: p.ID, CreatedAt: r.now(), TenantID: tenant}
		a.target(v.ID)
		out = VaultView{ID: v.ID, Name: v.Name, Description: v.Description, CreatedAt: v.CreatedAt, Credentials: []CredentialView{}, Tenant: tenant}
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&v).Error; err != nil {
				return err
			}
			return r.giveVaultCreator(tx, p, v)
		})
	})
	return out, err
}

// VaultList is Vault.list.
func (r *Runtime) VaultList(ctx context.Context, p Principal) ([]VaultView, error) {
	out := []VaultView{}
	err := r.run(ctx, p, "Vault.list", func(a *act) error {
		var vs []models.Vault
		if err := scopeVaults(r.db.WithContext(ctx), r.listScope(p, "Vault.list")).Order("name").Find(&vs).Error; err != nil {
			return err
		}
		l := r.listScope(p, "Vault.list")
		for _, v := range vs {
			if !l.Covers(v.TenantID, "", v.ID, "") {
				continue
			}
			view, err := r.vaultView(ctx, v)
			if err != nil {
				return err
			}
			out = append(out, view)
		}
		return nil
	})
	return out, err
}

func (r *Runtime) vaultView(ctx context.Context, v models.Vault) (VaultView, error) {
	view := VaultView{ID: v.ID, Name: v.Name, Description: v.Description, CreatedAt: v.CreatedAt, Credentials: []CredentialView{}, Tenant: v.TenantID}
	var cs []models.Credential
	if err := r.db.WithContext(ctx).Where("vault_id = ?", v.ID).Order("prefix").Find(&cs).Error; err != nil {
		return view, err
	}
	for _, c := range cs {
		cv := credentialView(c)
		cv.LastUsedAt = r.credentialLastUsed(c.ID, c.LastUsedAt)
		view.Credentials = append(view.Credentials, cv)
	}
	return view, nil
}

// loadVault finds a vault by id, then by name; names may not look like ids,
// so a reference never means two vaults.
func (r *Runtime) loadVault(ctx context.Context, ref string) (models.Vault, error) {
	var v models.Vault
	err := r.db.WithContext(ctx).First(&v, "id = ?", ref).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		err = r.db.WithContext(ctx).First(&v, "name = ?", ref).Error
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return v, notFound("vault", ref)
	}
	return v, err
}

// VaultGet is Vault.get (by id or name).
func (r *Runtime) VaultGet(ctx context.Context, p Principal, ref string) (VaultView, error) {
	var out VaultView
	err := r.run(ctx, p, "Vault.get", func(a *act) error {
		v, err := r.loadVault(ctx, ref)
		if err != nil {
			return err
		}
		out, err = r.vaultView(ctx, v)
		return err
	}, ref)
	return out, err
}

// VaultDelete is Vault.delete; a vault bound to a session still running is kept.
func (r *Runtime) VaultDelete(ctx context.Context, p Principal, ref string) error {
	return r.run(ctx, p, "Vault.delete", func(a *act) error {
		v, err := r.loadVault(ctx, ref)
		if err != nil {
			return err
		}
		a.target(v.ID)
		// The check and the deletion are one transaction, so a session created
		// in between cannot lose its credentials.
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			// Locking the vault first makes a Session.create binding it wait
			// for this transaction (its foreign key check locks the row too),
			// or be counted below if it committed first.
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&models.Vault{}, "id = ?", v.ID).Error; err != nil {
				return err
			}
			if err := vaultInUse(tx, v); err != nil {
				return err
			}
			if err := tx.Where("vault_id = ?", v.ID).Delete(&models.SessionVault{}).Error; err != nil {
				return err
			}
			if err := tx.Where("vault_id = ?", v.ID).Delete(&models.Credential{}).Error; err != nil {
				return err
			}
			// The permissions given on it to people go with it.
			if err := tx.Where("holder_kind = ? AND scope = ?", models.HolderUser, "vault:"+v.ID).Delete(&models.Permission{}).Error; err != nil {
				return err
			}
			return tx.Delete(&v).Error
		})
	}, ref)
}

// CredentialInput sets a credential: its URL prefix, its kind, and the secret,
// which is sealed before it is stored and never shown again.
type CredentialInput struct {
	Vault      string `json:"vault" param:"vault"`
	Prefix     string `json:"prefix" form:"prefix"`
	Type       string `json:"type" form:"type"`
	HeaderName string `json:"header_name" form:"header_name"`
	Username   string `json:"username" form:"username"`
	Secret     string `json:"secret" form:"secret"`
	// Client credentials only (vault_oauth_connect.go); Secret is the client secret.
	TokenURL string `json:"token_url" form:"token_url"`
	ClientID string `json:"client_id" form:"client_id"`
	Scopes   string `json:"scopes" form:"scopes"`
}

// CredentialSet is Credential.set: adds a credential, or replaces the one
// bound to the same prefix in that vault.
func (r *Runtime) CredentialSet(ctx context.Context, p Principal, in CredentialInput) (CredentialView, error) {
	var out CredentialView
	err := r.run(ctx, p, "Credential.set", func(a *act) error {
		v, err := r.loadVault(ctx, in.Vault)
		if err != nil {
			return err
		}
		if isOAuthType(in.Type) {
			return r.setOAuthCredential(ctx, a, v, in, &out)
		}
		c := vault.Credential{Prefix: strings.TrimSpace(in.Prefix), Type: in.Type, HeaderName: strings.TrimSpace(in.HeaderName), Username: in.Username}
		if err := firstErr(c.Validate(), vault.ValidateSecret(in.Secret)); err != nil {
			return vaultFieldError(err)
		}
		rec, err := r.storeCredential(ctx, v.ID, c, in.Secret)
		if err != nil && isUniqueViolation(err) {
			// Another Credential.set made the same prefix's row just now: replace it.
			rec, err = r.storeCredential(ctx, v.ID, c, in.Secret)
		}
		a.target(v.ID, rec.ID)
		out = credentialView(rec)
		return err
	}, in.Vault)
	return out, err
}

// storeCredential seals the secret for the prefix's row, new or existing.
func (r *Runtime) storeCredential(ctx context.Context, vaultID string, c vault.Credential, secret string) (models.Credential, error) {
	var rec models.Credential
	err := r.db.WithContext(ctx).First(&rec, "vault_id = ? AND prefix = ?", vaultID, c.Prefix).Error
	creating := errors.Is(err, gorm.ErrRecordNotFound)
	if creating {
		rec = models.Credential{ID: newID("cred"), VaultID: vaultID, Prefix: c.Prefix, CreatedAt: r.now()}
	} else if err != nil {
		return rec, err
	}
	rec.Type, rec.HeaderName, rec.Username, rec.UpdatedAt = c.Type, c.HeaderName, c.Username, r.now()
	// A static secret replacing an OAuth credential leaves no OAuth state behind.
	// The next even version, as in writeOAuth: an odd one is a refresh's claim.
	rec.OAuth, rec.Status, rec.StatusDetail, rec.ExpiresAt, rec.RefreshedAt, rec.Version = "", "", "", nil, nil, rec.Version+2-rec.Version%2
	r.forgetOAuth(rec.ID)
	// The credential's id is the AAD: a sealed secret cannot be moved to another row.
	if rec.KeyID, rec.Ciphertext, err = r.opts.Keys.Seal([]byte(secret), []byte(rec.ID)); err != nil {
		return rec, fmt.Errorf("runtime: seal credential: %w", err)
	}
	if creating {
		return rec, r.db.WithContext(ctx).Create(&rec).Error
	}
	return rec, r.db.WithContext(ctx).Save(&rec).Error
}

// isUniqueViolation recognises a unique-constraint failure on either database.
func isUniqueViolation(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "duplicate key value")
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func vaultFieldError(err error) error {
	var fe *vault.FieldError
	if errors.As(err, &fe) {
		return invalid(fe.Field, "invalid_"+fe.Field, fe.Detail)
	}
	return err
}

// CredentialList is Credential.list.
func (r *Runtime) CredentialList(ctx context.Context, p Principal, ref string) ([]CredentialView, error) {
	var out []CredentialView
	err := r.run(ctx, p, "Credential.list", func(a *act) error {
		v, err := r.loadVault(ctx, ref)
		if err != nil {
			return err
		}
		view, err := r.vaultView(ctx, v)
		out = view.Credentials
		return err
	}, ref)
	return out, err
}

// CredentialDelete is Credential.delete.
func (r *Runtime) CredentialDelete(ctx context.Context, p Principal, vaultRef, id string) error {
	return r.run(ctx, p, "Credential.delete", func(a *act) error {
		v, err := r.loadVault(ctx, vaultRef)
		if err != nil {
			return err
		}
		res := r.db.WithContext(ctx).Where("id = ? AND vault_id = ?", id, v.ID).Delete(&models.Credential{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return notFound("credential", id)
		}
		r.forgetOAuth(id)
		return nil
	}, vaultRef, id)
}

// attacherFor returns what to attach to requests to url for a session: the
// credential of the most specific prefix across the session's vaults (earlier
// vaults win ties), opened only now, in memory, for this call.
func (r *Runtime) attacherFor(ctx context.Context, sessionID, url string) (credID string, attach func(*http.Request), err error) {
	// The session's credentials come from memory until a write changes them
	// (hotpath.go); last_used_at is noted in memory and flushed.
	recs, err := r.sessionCredentials(ctx, sessionID)
	if err != nil {
		return "", nil, err
	}
	return r.attacherFrom(recs, url)
}

// attacherFrom is attacherFor over a list of credentials (a session's
// vaults, or one vault chosen to fetch a server's tools while editing).
func (r *Runtime) attacherFrom(recs []models.Credential, url string) (credID string, attach func(*http.Request), err error) {
	creds := make([]vault.Credential, len(recs))
	for i, c := range recs {
		creds[i] = vault.Credential{ID: c.ID, Prefix: c.Prefix, Type: c.Type, HeaderName: c.HeaderName, Username: c.Username}
	}
	match, ok := vault.Match(creds, url)
	if !ok {
		return "", func(*http.Request) {}, nil
	}
	for _, c := range recs {
		if c.ID != match.ID {
			continue
		}
		if isOAuthType(c.Type) {
			// Tokens are fetched, refreshed and attached per request (vault_oauth.go).
			r.credentialUsed(c.ID)
			return c.ID, r.oauthAttacher(c.ID), nil
		}
		secret, err := r.opts.Keys.Open(c.KeyID, c.Ciphertext, []byte(c.ID))
		if err != nil {
			return "", nil, fmt.Errorf("runtime: open credential %s: %w", c.ID, err)
		}
		r.credentialUsed(c.ID)
		s := string(secret)
		return c.ID, func(req *http.Request) { vault.Apply(req, match, s) }, nil
	}
	return "", func(*http.Request) {}, nil
}
