package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/egress"
	"github.com/subako/subako/runtime/oauth"
	"github.com/subako/subako/runtime/vault"
)

// The OAuth credential types: a token the runtime obtains and keeps fresh
// rather than a secret a person pastes.
const (
	CredentialOAuth             = "oauth"              // authorization code + PKCE, connected in the console
	CredentialClientCredentials = "client_credentials" // machine to machine
)

// CredentialNeedsReconnecting is the Status of an OAuth credential whose
// grant was refused: a person must connect it again.
const CredentialNeedsReconnecting = models.CredentialNeedsReconnect

func isOAuthType(t string) bool { return t == CredentialOAuth || t == CredentialClientCredentials }

// refreshBefore is how long before its expiry an access token is replaced.
const refreshBefore = 60 * time.Second

// oauthState is the runtime's in-memory side of OAuth credentials: the
// current access token of each credential (so a call does not open the
// sealed row every time) and the refreshes in flight. Its zero value works.
type oauthState struct {
	once   sync.Once
	client *oauth.Client
	group  singleflight.Group
	mu     sync.Mutex
	tokens map[string]cachedToken // by credential id
}

type cachedToken struct {
	access  string
	version int64
	expires time.Time // zero: the server did not say
}

func (r *Runtime) oauthClient() *oauth.Client {
	r.oauth.once.Do(func() {
		r.oauth.client = &oauth.Client{
			HTTP: &http.Client{Transport: egress.Transport(r.opts.AllowPrivateEgress), Timeout: 30 * time.Second,
				// An authorization server's answers are read where they are; a
				// redirect would carry a client secret or a code elsewhere.
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
			Now: r.now,
			// Plain http endpoints only where private addresses are allowed too.
			AllowHTTP: r.opts.AllowPrivateEgress,
		}
	})
	return r.oauth.client
}

func (r *Runtime) cachedOAuth(id string) (cachedToken, bool) {
	r.oauth.mu.Lock()
	defer r.oauth.mu.Unlock()
	t, ok := r.oauth.tokens[id]
	return t, ok
}

func (r *Runtime) cacheOAuth(id string, t cachedToken) {
	r.oauth.mu.Lock()
	defer r.oauth.mu.Unlock()
	if r.oauth.tokens == nil {
		r.oauth.tokens = map[string]cachedToken{}
	}
	if old, ok := r.oauth.tokens[id]; !ok || old.version <= t.version {
		r.oauth.tokens[id] = t
	}
}

// forgetOAuth drops a credential's cached token: it was replaced or deleted.
func (r *Runtime) forgetOAuth(id string) {
	r.oauth.mu.Lock()
	defer r.oauth.mu.Unlock()
	delete(r.oauth.tokens, id)
}

func (t cachedToken) fresh(now time.Time) bool {
	return t.access != "" && (t.expires.IsZero() || t.expires.Sub(now) > refreshBefore)
}

// oauthAttacher is attacherFor's branch for OAuth credentials: each request
// gets the credential's current access token, refreshed first when it is
// about to expire, or when the sender's previous try was refused (401) with
// the version now newest.
func (r *Runtime) oauthAttacher(credID string) func(*http.Request) {
	return func(req *http.Request) {
		a := vault.AttemptOf(req)
		stale := int64(-1)
		if a != nil {
			a.Refreshable = true
			if a.Retry {
				stale = a.Version
			}
		}
		tok, err := r.oauthToken(req.Context(), credID, stale)
		if err != nil {
			r.opts.Log.Warn("runtime: oauth credential", "credential", credID, "err", err)
			if a != nil {
				a.Err = err
			}
			return
		}
		if a != nil {
			a.Version = tok.version
			if a.Retry {
				a.Expired = r.expiredError(req.Context(), credID, "the refreshed token was refused too")
			}
		}
		vault.Apply(req, vault.Credential{Type: vault.TypeBearer}, tok.access)
	}
}

// oauthToken returns a usable access token for the credential: the cached
// one while it is fresh and not the stale version a 401 refused, else one
// refresh, coalesced with any other refresh of the credential in this
// process and compare-and-swapped on the row's version across processes.
func (r *Runtime) oauthToken(ctx context.Context, credID string, stale int64) (cachedToken, error) {
	if t, ok := r.cachedOAuth(credID); ok && t.version != stale && t.fresh(r.now()) {
		return t, nil
	}
	// The refresh outlives a caller that gives up, so the others waiting on
	// it, and the rotated refresh token, are not lost with it; the caller
	// itself stops waiting when its own context ends (a tool call's timeout).
	for try := 0; ; try++ {
		ch := r.oauth.group.DoChan(credID, func() (any, error) {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			return r.refreshOAuth(rctx, credID, stale)
		})
		var res singleflight.Result
		select {
		case <-ctx.Done():
			return cachedToken{}, fmt.Errorf("runtime: waiting for the oauth credential's refresh: %w", ctx.Err())
		case res = <-ch:
		}
		if res.Err != nil {
			return cachedToken{}, res.Err
		}
		t := res.Val.(cachedToken)
		// Joined a flight started for another caller, which kept the very
		// version this caller's server refused: run one for this caller.
		if stale >= 0 && t.version == stale && try == 0 {
			continue
		}
		return t, nil
	}
}

func (r *Runtime) loadOAuth(ctx context.Context, credID string) (models.Credential, oauth.Settings, oauth.Secrets, error) {
	var rec models.Credential
	var s oauth.Settings
	var sec oauth.Secrets
	if err := r.db.WithContext(ctx).First(&rec, "id = ?", credID).Error; err != nil {
		return rec, s, sec, fmt.Errorf("runtime: load oauth credential %s: %w", credID, err)
	}
	if err := json.Unmarshal([]byte(rec.OAuth), &s); err != nil {
		return rec, s, sec, fmt.Errorf("runtime: oauth credential %s settings: %w", credID, err)
	}
	plain, err := r.opts.Keys.Open(rec.KeyID, rec.Ciphertext, []byte(rec.ID))
	if err != nil {
		return rec, s, sec, fmt.Errorf("runtime: open credential %s: %w", rec.ID, err)
	}
	if err := json.Unmarshal(plain, &sec); err != nil {
		return rec, s, sec, fmt.Errorf("runtime: oauth credential %s: sealed tokens unreadable", rec.ID)
	}
	return rec, s, sec, nil
}

func tokenOf(rec models.Credential, sec oauth.Secrets) cachedToken {
	t := cachedToken{access: sec.AccessToken, version: rec.Version}
	if rec.ExpiresAt != nil {
		t.expires = *rec.ExpiresAt
	}
	return t
}

// refreshOAuth replaces a credential's access token. Across processes
// sharing the database, a refresh is claimed first by moving the row's
// version from v to v+1 (compare-and-swap); the claimer writes the result
// as v+2, and anyone who lost the claim waits for that instead of spending
// the same refresh token, which a rotating server would then refuse.
func (r *Runtime) refreshOAuth(ctx context.Context, credID string, stale int64) (cachedToken, error) {
	deadline := r.now().Add(claimWait)
	for {
		rec, s, sec, err := r.loadOAuth(ctx, credID)
		if err != nil {
			return cachedToken{}, err
		}
		if rec.Status == models.CredentialNeedsReconnect {
			r.forgetOAuth(credID)
			return cachedToken{}, r.expiredError(ctx, credID, rec.StatusDetail)
		}
		// Another process, or the refresh this one just finished, may already
		// have replaced the token the caller holds.
		if cur := tokenOf(rec, sec); rec.Version != stale && rec.Version%2 == 0 && cur.fresh(r.now()) {
			r.cacheOAuth(credID, cur)
			return cur, nil
		}
		if rec.Version%2 == 1 && r.now().Before(deadline) {
			// Claimed by another refresh: wait for its result.
			select {
			case <-ctx.Done():
				return cachedToken{}, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		claimed, err := r.casCredential(ctx, rec.ID, rec.Version, map[string]any{"version": rec.Version + 1 + rec.Version%2})
		if err != nil {
			return cachedToken{}, err
		}
		if !claimed {
			continue
		}
		rec.Version += 1 + rec.Version%2
		return r.refreshClaimed(ctx, rec, s, sec)
	}
}

// claimWait is how long a refresh waits for another process's refresh of
// the same credential before claiming it itself (that one died).
const claimWait = 10 * time.Second

func (r *Runtime) refreshClaimed(ctx context.Context, rec models.Credential, s oauth.Settings, sec oauth.Secrets) (cachedToken, error) {
	var tok oauth.Token
	var err error
	switch {
	case s.Grant == oauth.GrantClientCredentials:
		tok, err = r.oauthClient().ClientCredentials(ctx, s, sec.ClientSecret)
	case sec.RefreshToken == "":
		err = &oauth.Error{Step: "refresh", URL: s.TokenURL, Code: oauth.CodeNoRefreshToken, Description: "the authorization server issued no refresh token"}
	default:
		tok, err = r.oauthClient().Refresh(ctx, s, sec.ClientSecret, sec.RefreshToken)
	}
	if err != nil {
		return r.refreshFailed(ctx, rec, sec, err)
	}
	next := oauth.Secrets{AccessToken: tok.AccessToken, RefreshToken: sec.RefreshToken, ClientSecret: sec.ClientSecret}
	if tok.RefreshToken != "" {
		next.RefreshToken = tok.RefreshToken // rotation: the old one is spent
	}
	plain, _ := json.Marshal(next)
	keyID, ct, err := r.opts.Keys.Seal(plain, []byte(rec.ID))
	if err != nil {
		return cachedToken{}, fmt.Errorf("runtime: seal credential: %w", err)
	}
	var exp *time.Time
	if !tok.ExpiresAt.IsZero() {
		exp = &tok.ExpiresAt
	}
	saved, err := r.casCredential(ctx, rec.ID, rec.Version, map[string]any{"key_id": keyID, "ciphertext": ct, "version": rec.Version + 1,
		"expires_at": exp, "refreshed_at": r.now(), "status": models.CredentialConnected, "status_detail": ""})
	if err != nil {
		return cachedToken{}, err
	}
	if !saved {
		// Replaced meanwhile (reconnected, or claimed after our claim timed
		// out): the row's token is the one to use.
		return r.reloadOAuth(ctx, rec.ID)
	}
	t := cachedToken{access: tok.AccessToken, version: rec.Version + 1, expires: tok.ExpiresAt}
	r.cacheOAuth(rec.ID, t)
	return t, nil
}

// refreshFailed decides what a failed refresh means. A refused grant marks
// the credential as needing a person; a network failure releases the claim
// and keeps the token that is still valid, if any.
func (r *Runtime) refreshFailed(ctx context.Context, rec models.Credential, sec oauth.Secrets, err error) (cachedToken, error) {
	var oe *oauth.Error
	if errors.As(err, &oe) && oe.Permanent() {
		reason := "the authorization server refused the refresh: " + oe.Error()
		saved, cerr := r.casCredential(ctx, rec.ID, rec.Version, map[string]any{"status": models.CredentialNeedsReconnect,
			"status_detail": truncate(reason, 500), "version": rec.Version + 1})
		if cerr == nil && !saved {
			return r.reloadOAuth(ctx, rec.ID)
		}
		r.forgetOAuth(rec.ID)
		r.opts.Log.Warn("runtime: oauth credential needs reconnecting", "credential", rec.ID, "err", oe)
		expired := r.expiredError(ctx, rec.ID, reason)
		r.markDiscoveries(ctx, rec.ID, expired.Error())
		return cachedToken{}, expired
	}
	_, _ = r.casCredential(ctx, rec.ID, rec.Version, map[string]any{"version": rec.Version + 1})
	if cur := tokenOf(rec, sec); cur.access != "" && (cur.expires.IsZero() || r.now().Before(cur.expires)) {
		r.opts.Log.Warn("runtime: oauth refresh failed; the current token is still valid", "credential", rec.ID, "err", err)
		cur.version = rec.Version + 1
		return cur, nil
	}
	return cachedToken{}, fmt.Errorf("runtime: refresh oauth credential %s: %w", rec.ID, err)
}

func (r *Runtime) reloadOAuth(ctx context.Context, credID string) (cachedToken, error) {
	rec, _, sec, err := r.loadOAuth(ctx, credID)
	if err != nil {
		return cachedToken{}, err
	}
	if rec.Status == models.CredentialNeedsReconnect {
		return cachedToken{}, r.expiredError(ctx, credID, rec.StatusDetail)
	}
	t := tokenOf(rec, sec)
	r.cacheOAuth(credID, t)
	return t, nil
}

// casCredential updates the row only if its version is still version and
// it is still an OAuth credential: one replaced by a static secret is never
// written by a refresh that was in flight (it would seal the token JSON as
// the static secret, sent as it is to the server).
func (r *Runtime) casCredential(ctx context.Context, id string, version int64, set map[string]any) (bool, error) {
	res := r.db.WithContext(ctx).Model(&models.Credential{}).
		Where("id = ? AND version = ? AND type IN ?", id, version, []string{CredentialOAuth, CredentialClientCredentials}).Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("runtime: update oauth credential %s: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// expiredError names the vault and prefix of a credential a person must reconnect.
func (r *Runtime) expiredError(ctx context.Context, credID, reason string) error {
	var row struct {
		Prefix string
		Name   string
		Type   string
	}
	r.db.WithContext(ctx).Table("credentials").Select("credentials.prefix, vaults.name, credentials.type").
		Joins("JOIN vaults ON vaults.id = credentials.vault_id").Where("credentials.id = ?", credID).Scan(&row)
	return &vault.ExpiredError{Vault: row.Name, Prefix: row.Prefix, Reason: reason, ClientCredentials: row.Type == CredentialClientCredentials}
}

// oauthView adds what a page may know of an OAuth credential: its state,
// expiry and settings, never a token or secret.
func oauthView(v *CredentialView, c models.Credential) {
	if !isOAuthType(c.Type) {
		return
	}
	var s oauth.Settings
	_ = json.Unmarshal([]byte(c.OAuth), &s)
	v.Status, v.StatusDetail, v.ExpiresAt, v.RefreshedAt = c.Status, c.StatusDetail, c.ExpiresAt, c.RefreshedAt
	v.TokenURL, v.ClientID, v.Scopes, v.Issuer, v.Registration = s.TokenURL, s.ClientID, s.Scopes, s.Issuer, s.Registration
}

// markDiscoveries records on the MCP discoveries made with a credential why
// it stopped working, keeping their tools: the session page shows the
// server's last known tools with this reason rather than losing them. An
// empty reason clears it (the credential was reconnected).
func (r *Runtime) markDiscoveries(ctx context.Context, credID, reason string) {
	q := r.db.WithContext(ctx).Model(&models.MCPDiscovery{}).Where("credential_id = ?", credID)
	if reason == "" {
		q = q.Where("error <> ''")
	}
	if err := q.Update("error", truncate(reason, 1000)).Error; err != nil {
		r.opts.Log.Warn("runtime: note an oauth credential on its discoveries", "credential", credID, "err", err)
	}
}
