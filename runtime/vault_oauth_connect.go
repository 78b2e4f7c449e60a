package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/oauth"
	"github.com/subako/subako/runtime/vault"
)

// Limits on what a person types for an OAuth credential.
const (
	maxClientIDLen = 256
	maxScopesLen   = 1000
	// pendingTTL is how long a started authorization can be finished.
	pendingTTL = 10 * time.Minute
)

// oauthConnectBudget is how long Connect with OAuth may spend discovering
// and registering before the person's page gets an answer (a variable for tests).
var oauthConnectBudget = 30 * time.Second

// OAuthConnectInput starts "Connect with OAuth" for a URL prefix of a vault.
// ClientID empty means dynamic client registration.
type OAuthConnectInput struct {
	Vault        string
	Prefix       string
	ClientID     string
	ClientSecret string
	Scopes       string
}

// OAuthConnected says which credential an authorization connected.
type OAuthConnected struct {
	VaultID string
	Prefix  string
}

func checkOAuthFields(prefix, clientID, clientSecret, scopes string) error {
	if err := (vault.Credential{Prefix: prefix, Type: vault.TypeBearer}).Validate(); err != nil {
		return vaultFieldError(err)
	}
	switch {
	case len(clientID) > maxClientIDLen:
		return invalid("client_id", "invalid_client_id", fmt.Sprintf("client_id must be at most %d characters, got %d", maxClientIDLen, len(clientID)))
	case strings.ContainsFunc(clientID, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return invalid("client_id", "invalid_client_id", "client_id must not contain control characters")
	case len(scopes) > maxScopesLen:
		return invalid("scopes", "invalid_scopes", fmt.Sprintf("scopes must be at most %d characters, got %d", maxScopesLen, len(scopes)))
	case !utf8.ValidString(scopes) || strings.ContainsFunc(scopes, func(r rune) bool { return r != ' ' && (r < 0x21 || r > 0x7e || r == '"' || r == '\\') }):
		return invalid("scopes", "invalid_scopes", "scopes are space-separated names of printable ASCII characters without quotes or backslashes (RFC 6749 section 3.3)")
	}
	if clientSecret != "" {
		if err := vault.ValidateSecret(clientSecret); err != nil {
			var fe *vault.FieldError
			if errors.As(err, &fe) {
				return invalid("client_secret", "invalid_client_secret", "client_secret "+fe.Detail)
			}
			return err
		}
	}
	return nil
}

// OAuthConnectStart is the first half of "Connect with OAuth" (permission
// Credential.set): it discovers the prefix's authorization server, registers
// a client when none is given and the server allows it, and returns the URL
// to send the person's browser to. The state is bound to webSession (the
// console's session id) and usable once, for ten minutes.
func (r *Runtime) OAuthConnectStart(ctx context.Context, p Principal, webSession, redirectURI string, in OAuthConnectInput) (string, error) {
	var authURL string
	err := r.run(ctx, p, "Credential.set", func(a *act) error {
		v, err := r.loadVault(ctx, in.Vault)
		if err != nil {
			return err
		}
		a.target(v.ID)
		prefix, clientID, scopes := strings.TrimSpace(in.Prefix), strings.TrimSpace(in.ClientID), strings.Join(strings.Fields(in.Scopes), " ")
		if err := checkOAuthFields(prefix, clientID, in.ClientSecret, scopes); err != nil {
			return err
		}
		if webSession == "" {
			return invalid("state", "oauth_needs_console", "Connect with OAuth runs in the console, in a signed-in browser")
		}
		client := r.oauthClient()
		// Discovery and registration are up to seven requests to servers the
		// prefix names; the person's page waits for them, so they share one budget.
		ctx, cancel := context.WithTimeout(ctx, oauthConnectBudget)
		defer cancel()
		md, err := client.Discover(ctx, prefix)
		if err != nil {
			return invalid("prefix", "oauth_discovery_failed", err.Error())
		}
		s := oauth.Settings{Grant: oauth.GrantAuthorizationCode, Issuer: md.Issuer, AuthorizeURL: md.AuthorizationEndpoint,
			TokenURL: md.TokenEndpoint, RevocationURL: md.RevocationEndpoint, Scopes: scopes, Resource: md.Resource, RedirectURI: redirectURI}
		if s.Scopes == "" {
			s.Scopes = strings.Join(md.ScopesSupported, " ")
		}
		secret := in.ClientSecret
		prev, prevSecret := r.previousClient(ctx, v.ID, prefix)
		switch {
		case clientID == "" && prev.Registration == "dynamic" && prev.Issuer == md.Issuer && prev.TokenURL == md.TokenEndpoint && prev.RedirectURI == redirectURI:
			// Reconnecting: the client registered last time is still ours.
			secret = prevSecret
			s.ClientID, s.AuthMethod, s.Registration = prev.ClientID, prev.AuthMethod, "dynamic"
		case clientID != "" && secret == "" && prev.ClientID == clientID && prev.Issuer == md.Issuer && prev.TokenURL == md.TokenEndpoint:
			// Reconnecting a client entered by hand: its secret was kept sealed,
			// and goes only to the authorization server it was entered for (the
			// prefix's metadata may name another one now).
			secret = prevSecret
		}
		switch {
		case s.Registration == "dynamic":
		case clientID == "":
			if md.RegistrationEndpoint == "" {
				return invalid("client_id", "client_id_required", fmt.Sprintf(
					"the authorization server %s does not offer dynamic client registration: register Subako there with the redirect URI %s and enter its client id (and secret)",
					md.Issuer, redirectURI))
			}
			reg, err := client.Register(ctx, md, redirectURI, s.Scopes)
			if err != nil {
				return invalid("client_id", "oauth_registration_failed", err.Error())
			}
			s.ClientID, secret, s.AuthMethod, s.Registration = reg.ClientID, reg.ClientSecret, reg.AuthMethod, "dynamic"
		default:
			s.ClientID, s.AuthMethod, s.Registration = clientID, oauth.AuthMethodFor(secret, md.AuthMethods), "manual"
		}
		verifier, challenge := oauth.NewVerifier()
		state := oauth.NewState()
		pend := models.OAuthPending{ID: hashSecret(state), WebSession: hashSecret(webSession), UserID: p.ID, VaultID: v.ID,
			Prefix: prefix, CreatedAt: r.now(), ExpiresAt: r.now().Add(pendingTTL)}
		settings, _ := json.Marshal(s)
		pend.OAuth = string(settings)
		sealed, _ := json.Marshal(oauth.Secrets{Verifier: verifier, ClientSecret: secret})
		if pend.KeyID, pend.Ciphertext, err = r.opts.Keys.Seal(sealed, []byte(pend.ID)); err != nil {
			return fmt.Errorf("runtime: seal oauth verifier: %w", err)
		}
		db := r.db.WithContext(ctx)
		db.Where("expires_at < ?", r.now()).Delete(&models.OAuthPending{})
		if err := db.Create(&pend).Error; err != nil {
			return err
		}
		authURL = oauth.AuthURL(s, state, challenge)
		return nil
	}, in.Vault)
	return authURL, err
}

// errStateUnknown is every way a callback's state can fail to name a pending
// authorization of this person: none, used, expired.
func errStateUnknown() error {
	return invalid("state", "oauth_state_unknown", "this authorization is unknown, already used or expired (they last ten minutes); start Connect with OAuth again")
}

// takeOAuthPending takes (deletes) the pending authorization state names:
// whoever deletes the row finishes the flow.
func (r *Runtime) takeOAuthPending(ctx context.Context, state string) (models.OAuthPending, error) {
	var pend models.OAuthPending
	if state == "" {
		return pend, errStateUnknown()
	}
	db := r.db.WithContext(ctx)
	if err := db.First(&pend, "id = ?", hashSecret(state)).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return pend, errStateUnknown()
	} else if err != nil {
		return pend, err
	}
	if res := db.Where("id = ?", pend.ID).Delete(&models.OAuthPending{}); res.Error != nil {
		return pend, res.Error
	} else if res.RowsAffected != 1 {
		return pend, errStateUnknown()
	}
	return pend, nil
}

// OAuthConnectFinish is the callback's half: it takes the pending
// authorization named by state (once), checks it belongs to this browser
// session, trades the code and verifier for tokens and stores them sealed
// as the prefix's credential. errCode is the server's error parameter.
func (r *Runtime) OAuthConnectFinish(ctx context.Context, p Principal, webSession, state, code, errCode, errDesc string) (OAuthConnected, error) {
	var out OAuthConnected
	// Single use, whoever opens it: the pending authorization is taken
	// before the check of Credential.set on its vault, so a callback opened
	// first by anyone else, refused or not, ends the flow.
	pend, takeErr := r.takeOAuthPending(ctx, state)
	var targets []string
	if takeErr == nil {
		targets = append(targets, pend.VaultID)
	}
	err := r.run(ctx, p, "Credential.set", func(a *act) error {
		if state == "" || webSession == "" {
			return errStateUnknown()
		}
		if takeErr != nil {
			return takeErr
		}
		out = OAuthConnected{VaultID: pend.VaultID, Prefix: pend.Prefix}
		if pend.WebSession != hashSecret(webSession) || pend.UserID != p.ID || r.now().After(pend.ExpiresAt) {
			return errStateUnknown()
		}
		if errCode != "" {
			msg := "the authorization server answered " + oauthText(errCode)
			if errDesc != "" {
				msg += ": " + oauthText(errDesc)
			}
			return invalid("code", "oauth_denied", msg)
		}
		if code == "" {
			return invalid("code", "oauth_no_code", "the authorization server sent no code back")
		}
		var s oauth.Settings
		var sec oauth.Secrets
		plain, err := r.opts.Keys.Open(pend.KeyID, pend.Ciphertext, []byte(pend.ID))
		if err == nil {
			err = json.Unmarshal(plain, &sec)
		}
		if err == nil {
			err = json.Unmarshal([]byte(pend.OAuth), &s)
		}
		if err != nil {
			return fmt.Errorf("runtime: open pending authorization: %w", err)
		}
		tok, err := r.oauthClient().Exchange(ctx, s, sec.ClientSecret, code, sec.Verifier)
		if err != nil {
			return invalid("code", "oauth_exchange_failed", err.Error())
		}
		rec, err := r.storeOAuth(ctx, pend.VaultID, pend.Prefix, CredentialOAuth, s,
			oauth.Secrets{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, ClientSecret: sec.ClientSecret}, tok.ExpiresAt)
		a.target(rec.ID)
		return err
	}, targets...)
	return out, err
}

// oauthText keeps a server's error parameter short and printable.
func oauthText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return truncate(s, 200)
}

// setOAuthCredential is Credential.set for the OAuth types. Client
// credentials are checked by fetching a token now, so a wrong secret is
// refused when it is set; the code flow needs a person's browser.
func (r *Runtime) setOAuthCredential(ctx context.Context, a *act, v models.Vault, in CredentialInput, out *CredentialView) error {
	a.target(v.ID)
	if in.Type == CredentialOAuth {
		return invalid("type", "oauth_needs_console", "an oauth credential is connected in the console (the vault's page, Connect with OAuth), where the authorization runs in a person's browser; use client_credentials for machine-to-machine APIs")
	}
	prefix, clientID, scopes := strings.TrimSpace(in.Prefix), strings.TrimSpace(in.ClientID), strings.Join(strings.Fields(in.Scopes), " ")
	if err := checkOAuthFields(prefix, clientID, "", scopes); err != nil {
		return err
	}
	if in.HeaderName != "" || in.Username != "" {
		return invalid("type", "invalid_type", "header_name and username are not used by client_credentials")
	}
	tokenURL := strings.TrimSpace(in.TokenURL)
	if u, err := url.Parse(tokenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" || len(tokenURL) > vault.MaxPrefixLen {
		return invalid("token_url", "invalid_token_url", fmt.Sprintf("token_url must be an absolute http or https URL of at most %d characters, without user info or fragment", vault.MaxPrefixLen))
	} else if u.Scheme == "http" && !r.opts.AllowPrivateEgress {
		// The client secret goes there: not in the clear (OAuth 2.1 section 1.5).
		return invalid("token_url", "invalid_token_url", "token_url must be https (the client secret is sent there); plain http is allowed only when the server runs with --egress-allow-private")
	}
	if clientID == "" {
		return invalid("client_id", "invalid_client_id", "client_id is required for client_credentials")
	}
	if err := vault.ValidateSecret(in.Secret); err != nil {
		return vaultFieldError(err)
	}
	s := oauth.Settings{Grant: oauth.GrantClientCredentials, TokenURL: tokenURL, ClientID: clientID, Scopes: scopes,
		AuthMethod: "client_secret_basic", Registration: "manual"}
	tok, err := r.oauthClient().ClientCredentials(ctx, s, in.Secret)
	if oe := (*oauth.Error)(nil); errors.As(err, &oe) && oe.Code == "invalid_client" {
		// Some servers take the secret only in the form (client_secret_post).
		s.AuthMethod = "client_secret_post"
		if tok2, err2 := r.oauthClient().ClientCredentials(ctx, s, in.Secret); err2 == nil {
			tok, err = tok2, nil
		} else {
			s.AuthMethod = "client_secret_basic"
		}
	}
	if err != nil {
		var oe *oauth.Error
		if errors.As(err, &oe) && oe.Permanent() {
			return invalid("secret", "oauth_client_refused", "the token endpoint refused the client: "+err.Error())
		}
		return invalid("token_url", "oauth_token_failed", "no token from the token endpoint: "+err.Error())
	}
	rec, err := r.storeOAuth(ctx, v.ID, prefix, CredentialClientCredentials, s, oauth.Secrets{AccessToken: tok.AccessToken, ClientSecret: in.Secret}, tok.ExpiresAt)
	a.target(rec.ID)
	*out = credentialView(rec)
	return err
}

// storeOAuth seals tokens as the prefix's credential, new or replaced, as
// connected, and bumps its version so a refresh in flight from the old
// tokens cannot overwrite them.
func (r *Runtime) storeOAuth(ctx context.Context, vaultID, prefix, typ string, s oauth.Settings, sec oauth.Secrets, expires time.Time) (models.Credential, error) {
	rec, err := r.writeOAuth(ctx, vaultID, prefix, typ, s, sec, expires)
	if err != nil && isUniqueViolation(err) {
		rec, err = r.writeOAuth(ctx, vaultID, prefix, typ, s, sec, expires)
	}
	return rec, err
}

func (r *Runtime) writeOAuth(ctx context.Context, vaultID, prefix, typ string, s oauth.Settings, sec oauth.Secrets, expires time.Time) (models.Credential, error) {
	var rec models.Credential
	db := r.db.WithContext(ctx)
	err := db.First(&rec, "vault_id = ? AND prefix = ?", vaultID, prefix).Error
	creating := errors.Is(err, gorm.ErrRecordNotFound)
	if creating {
		rec = models.Credential{ID: newID("cred"), VaultID: vaultID, Prefix: prefix, CreatedAt: r.now()}
	} else if err != nil {
		return rec, err
	}
	settings, _ := json.Marshal(s)
	now := r.now()
	rec.Type, rec.HeaderName, rec.Username, rec.OAuth = typ, "", "", string(settings)
	rec.Status, rec.StatusDetail, rec.UpdatedAt, rec.RefreshedAt = models.CredentialConnected, "", now, &now
	// The next even version: an odd one is a refresh's claim (vault_oauth.go), which then fails its swap.
	rec.Version += 2 - rec.Version%2
	rec.ExpiresAt = nil
	if !expires.IsZero() {
		rec.ExpiresAt = &expires
	}
	plain, _ := json.Marshal(sec)
	if rec.KeyID, rec.Ciphertext, err = r.opts.Keys.Seal(plain, []byte(rec.ID)); err != nil {
		return rec, fmt.Errorf("runtime: seal credential: %w", err)
	}
	r.forgetOAuth(rec.ID)
	if creating {
		return rec, db.Create(&rec).Error
	}
	if err := db.Save(&rec).Error; err != nil {
		return rec, err
	}
	r.markDiscoveries(ctx, rec.ID, "")
	return rec, nil
}

// previousClient is the client of the prefix's current OAuth credential, if
// any, with its sealed secret: a reconnect keeps using it.
func (r *Runtime) previousClient(ctx context.Context, vaultID, prefix string) (oauth.Settings, string) {
	var rec models.Credential
	if r.db.WithContext(ctx).First(&rec, "vault_id = ? AND prefix = ? AND type = ?", vaultID, prefix, CredentialOAuth).Error != nil {
		return oauth.Settings{}, ""
	}
	_, s, sec, err := r.loadOAuth(ctx, rec.ID)
	if err != nil {
		return oauth.Settings{}, ""
	}
	return s, sec.ClientSecret
}
