package runtime

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
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
