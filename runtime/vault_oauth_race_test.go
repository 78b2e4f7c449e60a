package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime/oauth"
	"github.com/subako/subako/runtime/vault"
)

// A refresh that was in flight when its OAuth credential was replaced by a
// static secret does not write its tokens over the static secret: else the
// row's sealed secret would be the token JSON (refresh token and client
// secret included), attached as it is as the bearer token to the server.
func TestOAuthRefreshInFlightDoesNotOverwriteAStaticReplacement(t *testing.T) {
	ctx := t.Context()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-new", "token_type": "Bearer", "refresh_token": "rt-new", "expires_in": 3600})
	}))
	defer srv.Close()
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("k", 40))
	r := New(modelstest.Open(t), Options{Keys: keys, AllowPrivateEgress: true})
	t.Cleanup(r.Close)
	if _, _, err := r.UserCreate(ctx, System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ := r.PrincipalForEmail(ctx, "owner@example.com")
	v, err := r.VaultCreate(ctx, owner, VaultInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "https://api.example/"
	s := oauth.Settings{Grant: oauth.GrantAuthorizationCode, TokenURL: srv.URL, ClientID: "c1"}
	rec, err := r.storeOAuth(ctx, v.ID, prefix, CredentialOAuth, s, oauth.Secrets{AccessToken: "at-old", RefreshToken: "rt-SECRET-old", ClientSecret: "cs-SECRET"}, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// Replaced by a static bearer token while a refresh holds the old row.
	if _, err := r.CredentialSet(ctx, owner, CredentialInput{Vault: v.ID, Prefix: prefix, Type: vault.TypeBearer, Secret: "static-secret-value"}); err != nil {
		t.Fatal(err)
	}
	var now models.Credential
	r.db.First(&now, "id = ?", rec.ID)
	if now.Version%2 != 0 {
		t.Errorf("a static replacement left version %d, which reads as a refresh's claim", now.Version)
	}
	// The refresh's claim collided with the replacement's version (the
	// replacement read the row before the claim and saved after it).
	inflight := rec
	inflight.Version = now.Version
	sec := oauth.Secrets{AccessToken: "at-old", RefreshToken: "rt-SECRET-old", ClientSecret: "cs-SECRET"}
	_, _ = r.refreshClaimed(ctx, inflight, s, sec)
	r.db.First(&now, "id = ?", rec.ID)
	plain, err := keys.Open(now.KeyID, now.Ciphertext, []byte(now.ID))
	if err != nil || string(plain) != "static-secret-value" || now.Type != vault.TypeBearer || now.OAuth != "" || now.Status != "" {
		t.Fatalf("after the in-flight refresh: type %q status %q secret %q (err %v)", now.Type, now.Status, plain, err)
	}
}

// A call waiting for its credential's refresh stops waiting when its own
// context ends (a tool call's timeout), even if the token endpoint hangs;
// the refresh itself goes on for whoever else waits.
func TestOAuthWaitForRefreshHonoursTheCallersContext(t *testing.T) {
	ctx := t.Context()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-new", "token_type": "Bearer", "expires_in": 3600})
	}))
	defer srv.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // before srv.Close, which waits for the handler
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("k", 40))
	r := New(modelstest.Open(t), Options{Keys: keys, AllowPrivateEgress: true})
	t.Cleanup(r.Close)
	if _, _, err := r.UserCreate(ctx, System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ := r.PrincipalForEmail(ctx, "owner@example.com")
	v, err := r.VaultCreate(ctx, owner, VaultInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	s := oauth.Settings{Grant: oauth.GrantAuthorizationCode, TokenURL: srv.URL, ClientID: "c1"}
	rec, err := r.storeOAuth(ctx, v.ID, "https://api.example/", CredentialOAuth, s, oauth.Secrets{AccessToken: "at-old", RefreshToken: "rt-old"}, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r.oauthToken(cctx, rec.ID, -1)
	if waited := time.Since(start); err == nil || waited > 5*time.Second {
		t.Fatalf("oauthToken with a 300 ms context and a hanging token endpoint: err %v after %v", err, waited)
	}
	unblock()
	// The refresh went on: the next caller gets its token.
	tok, err := r.oauthToken(ctx, rec.ID, -1)
	if err != nil || tok.access != "at-new" {
		t.Fatalf("after the token endpoint answered: %q, %v", tok.access, err)
	}
}

// A caller whose token was just refused (401) and who joins a refresh
// started by another caller that kept that same token (it was still fresh
// by its expiry) gets a refresh of its own, not the refused token again.
func TestOAuthRetryAfter401DoesNotTakeTheRefusedTokenFromAnotherFlight(t *testing.T) {
	ctx := t.Context()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-new", "token_type": "Bearer", "expires_in": 3600})
	}))
	defer srv.Close()
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("k", 40))
	r := New(modelstest.Open(t), Options{Keys: keys, AllowPrivateEgress: true})
	t.Cleanup(r.Close)
	if _, _, err := r.UserCreate(ctx, System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ := r.PrincipalForEmail(ctx, "owner@example.com")
	v, err := r.VaultCreate(ctx, owner, VaultInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	s := oauth.Settings{Grant: oauth.GrantAuthorizationCode, TokenURL: srv.URL, ClientID: "c1"}
	rec, err := r.storeOAuth(ctx, v.ID, "https://api.example/", CredentialOAuth, s, oauth.Secrets{AccessToken: "at-old", RefreshToken: "rt-old"}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// Another caller's flight (cold cache) that answers the stored token.
	release := make(chan struct{})
	other := r.oauth.group.DoChan(rec.ID, func() (any, error) {
		<-release
		return cachedToken{access: "at-old", version: rec.Version, expires: time.Now().Add(time.Hour)}, nil
	})
	got := make(chan cachedToken, 1)
	go func() {
		tok, _ := r.oauthToken(ctx, rec.ID, rec.Version) // at-old was refused with a 401
		got <- tok
	}()
	time.Sleep(200 * time.Millisecond) // let it join the other flight
	close(release)
	<-other
	if tok := <-got; tok.access != "at-new" {
		t.Fatalf("after a 401 on version %d the caller got %q (version %d), want a refreshed token", rec.Version, tok.access, tok.version)
	}
}

// Connect with OAuth answers within its budget when the prefix's servers
// never answer (each of its up to seven requests would otherwise wait its
// own 30 s), and says which step failed.
func TestOAuthConnectStartIsBoundedInTime(t *testing.T) {
	ctx := t.Context()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for the handlers
	defer func(b time.Duration) { oauthConnectBudget = b }(oauthConnectBudget)
	oauthConnectBudget = 500 * time.Millisecond
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("k", 40))
	r := New(modelstest.Open(t), Options{Keys: keys, AllowPrivateEgress: true})
	t.Cleanup(r.Close)
	if _, _, err := r.UserCreate(ctx, System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ := r.PrincipalForEmail(ctx, "owner@example.com")
	v, err := r.VaultCreate(ctx, owner, VaultInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = r.OAuthConnectStart(ctx, owner, "web-1", "http://127.0.0.1:9/vaults/oauth/callback", OAuthConnectInput{Vault: v.ID, Prefix: srv.URL + "/mcp"})
	e, ok := AsError(err)
	if waited := time.Since(start); !ok || e.Field != "prefix" || waited > 5*time.Second {
		t.Fatalf("connect to servers that never answer: %v after %v, want an error on prefix within the budget", err, waited)
	}
}

// A refresh answered without a refresh_token keeps the old one (used again
// next time); a token endpoint that cannot be reached does not mark the
// credential, a refused refresh (invalid_grant) does, naming it.
func TestOAuthRefreshKeepsTheRefreshTokenAndMarksOnlyARefusal(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	var sent []string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, r.FormValue("refresh_token"))
		w.Header().Set("Content-Type", "application/json")
		if refuse {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid_grant"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + time.Now().String(), "token_type": "Bearer", "expires_in": 30})
	}))
	defer srv.Close()
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("k", 40))
	r := New(modelstest.Open(t), Options{Keys: keys, AllowPrivateEgress: true})
	t.Cleanup(r.Close)
	if _, _, err := r.UserCreate(ctx, System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ := r.PrincipalForEmail(ctx, "owner@example.com")
	v, err := r.VaultCreate(ctx, owner, VaultInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	s := oauth.Settings{Grant: oauth.GrantAuthorizationCode, TokenURL: srv.URL, ClientID: "c1"}
	rec, err := r.storeOAuth(ctx, v.ID, "https://api.example/", CredentialOAuth, s, oauth.Secrets{AccessToken: "at-old", RefreshToken: "rt-only"}, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// expires_in 30 is inside the 60 s margin: each call refreshes.
	for range 2 {
		if _, err := r.oauthToken(ctx, rec.ID, -1); err != nil {
			t.Fatal(err)
		}
	}
	if len(sent) != 2 || sent[0] != "rt-only" || sent[1] != "rt-only" {
		t.Fatalf("refresh tokens sent: %q, want the kept one twice", sent)
	}
	srv.Close() // unreachable: not the grant's fault
	_, err = r.oauthToken(ctx, rec.ID, -1)
	var row models.Credential
	r.db.First(&row, "id = ?", rec.ID)
	if row.Status != models.CredentialConnected {
		t.Fatalf("an unreachable token endpoint marked the credential %q (err %v)", row.Status, err)
	}
	srv2 := httptest.NewServer(srv.Config.Handler)
	defer srv2.Close()
	s.TokenURL = srv2.URL
	settings, _ := json.Marshal(s)
	r.db.Model(&models.Credential{}).Where("id = ?", rec.ID).Update("oauth", string(settings))
	mu.Lock()
	refuse = true
	mu.Unlock()
	_, err = r.oauthToken(ctx, rec.ID, -1)
	r.db.First(&row, "id = ?", rec.ID)
	if row.Status != models.CredentialNeedsReconnect || err == nil || !strings.Contains(err.Error(), "credential_expired") || !strings.Contains(err.Error(), "acme") {
		t.Fatalf("a refused refresh: status %q, err %v", row.Status, err)
	}
}
