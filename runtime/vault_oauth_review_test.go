package runtime_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/vault"
)

// A runtime with the default egress rule (no --egress-allow-private), an
// owner and a vault.
func strictVaultWorld(t *testing.T) (*runtime.Runtime, runtime.Principal, string) {
	t.Helper()
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("k", 40))
	rt := runtime.New(modelstest.Open(t), runtime.Options{Keys: keys})
	t.Cleanup(rt.Close)
	if _, _, err := rt.UserCreate(t.Context(), runtime.System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, err := rt.PrincipalForEmail(t.Context(), "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	v, err := rt.VaultCreate(t.Context(), owner, runtime.VaultInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return rt, owner, v.ID
}

// Client credentials' token_url gets the client secret: a plain http one
// is refused by name (not sent in the clear) unless private egress is on,
// and the other fields name their limits.
func TestOAuthClientCredentialsFieldsNamedWithLimits(t *testing.T) {
	rt, owner, vaultID := strictVaultWorld(t)
	base := runtime.CredentialInput{Vault: vaultID, Prefix: "https://api.example/", Type: "client_credentials",
		TokenURL: "https://auth.example/token", ClientID: "m2m", Secret: "m2m-secret-value"}
	for _, tc := range []struct {
		name   string
		change func(*runtime.CredentialInput)
		field  string
		says   string
	}{
		{"http token_url", func(in *runtime.CredentialInput) { in.TokenURL = "http://auth.example/token" }, "token_url", "https"},
		{"javascript token_url", func(in *runtime.CredentialInput) { in.TokenURL = "javascript:alert(1)" }, "token_url", "absolute"},
		{"long client_id", func(in *runtime.CredentialInput) { in.ClientID = strings.Repeat("c", 257) }, "client_id", "256"},
		{"no client_id", func(in *runtime.CredentialInput) { in.ClientID = "" }, "client_id", "required"},
		{"long scopes", func(in *runtime.CredentialInput) { in.Scopes = strings.Repeat("s ", 600) }, "scopes", "1000"},
		{"control character in scopes", func(in *runtime.CredentialInput) { in.Scopes = "read\x00write\x1b[31m" }, "scopes", "printable ASCII"},
		{"non-ASCII scopes", func(in *runtime.CredentialInput) { in.Scopes = "read écrire" }, "scopes", "printable ASCII"},
		{"bad prefix", func(in *runtime.CredentialInput) { in.Prefix = "ftp://api.example/" }, "prefix", "https://"},
	} {
		in := base
		tc.change(&in)
		_, err := rt.CredentialSet(t.Context(), owner, in)
		e, ok := runtime.AsError(err)
		if !ok || e.Field != tc.field || !strings.Contains(e.Detail, tc.says) {
			t.Errorf("%s: err = %v, want an error on %s saying %q", tc.name, err, tc.field, tc.says)
		}
		if ok && strings.Contains(e.Detail, "m2m-secret-value") {
			t.Errorf("%s: the client secret is in the error", tc.name)
		}
	}
}

// Without --egress-allow-private, Connect with OAuth and client credentials
// never reach a loopback server (the egress guard judges the address at
// connect time, as for MCP URLs): the prefix and token_url are refused
// with the reason, and the server sees no request.
func TestOAuthRequestsObeyTheEgressRule(t *testing.T) {
	rt, owner, vaultID := strictVaultWorld(t)
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, err := rt.OAuthConnectStart(t.Context(), owner, "web-1", "https://subako.example/vaults/oauth/callback",
		runtime.OAuthConnectInput{Vault: vaultID, Prefix: srv.URL + "/mcp"})
	if e, ok := runtime.AsError(err); !ok || e.Field != "prefix" || !strings.Contains(e.Detail, "refused") {
		t.Errorf("connect to a loopback prefix: %v, want a refusal on prefix", err)
	}
	_, err = rt.CredentialSet(t.Context(), owner, runtime.CredentialInput{Vault: vaultID, Prefix: "https://api.example/", Type: "client_credentials",
		TokenURL: srv.URL + "/token", ClientID: "m2m", Secret: "m2m-secret-value"})
	if e, ok := runtime.AsError(err); !ok || e.Field != "token_url" || !strings.Contains(e.Detail, "refused") {
		t.Errorf("client credentials at a loopback token_url: %v, want a refusal on token_url", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server got %d requests", hits.Load())
	}
}

// fakeAS is a bare authorization server on loopback: RFC 8414 metadata and
// a token endpoint that takes any code and records the client secrets it
// was sent (Basic or form).
type fakeAS struct {
	srv *httptest.Server
	mu  sync.Mutex
	saw []string
}

func startFakeAS(t *testing.T) *fakeAS {
	as := &fakeAS{}
	mux := http.NewServeMux()
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.srv.URL, "authorization_endpoint": as.srv.URL + "/authorize",
			"token_endpoint": as.srv.URL + "/token", "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_, pass, _ := r.BasicAuth()
		as.mu.Lock()
		as.saw = append(as.saw, pass+"|"+r.FormValue("client_secret"))
		as.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-x", "token_type": "Bearer", "refresh_token": "rt-x", "expires_in": 3600})
	})
	return as
}

func (as *fakeAS) sawSecret(s string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, v := range as.saw {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// Reconnecting a client entered by hand reuses its sealed secret only at
// the authorization server it was entered for. If the prefix's metadata now
// names another authorization server (the resource server changed or was
// taken over), the secret is not sent there.
func TestOAuthReconnectDoesNotSendTheClientSecretToAnotherServer(t *testing.T) {
	as1, as2 := startFakeAS(t), startFakeAS(t)
	var asURL atomic.Value
	asURL.Store(as1.srv.URL)
	rsMux := http.NewServeMux()
	rs := httptest.NewServer(rsMux)
	defer rs.Close()
	rsMux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": rs.URL + "/mcp", "authorization_servers": []string{asURL.Load().(string)}})
	})
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("k", 40))
	rt := runtime.New(modelstest.Open(t), runtime.Options{Keys: keys, AllowPrivateEgress: true})
	t.Cleanup(rt.Close)
	ctx := t.Context()
	if _, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ := rt.PrincipalForEmail(ctx, "owner@example.com")
	v, err := rt.VaultCreate(ctx, owner, runtime.VaultInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	const redirect = "http://127.0.0.1:9/vaults/oauth/callback"
	connect := func(secret string) error {
		t.Helper()
		to, err := rt.OAuthConnectStart(ctx, owner, "web-1", redirect, runtime.OAuthConnectInput{Vault: v.ID, Prefix: rs.URL + "/mcp", ClientID: "c1", ClientSecret: secret})
		if err != nil {
			return err
		}
		u, _ := url.Parse(to)
		_, err = rt.OAuthConnectFinish(ctx, owner, "web-1", u.Query().Get("state"), "code-1", "", "")
		return err
	}
	if err := connect("cs-ORIGINAL-SECRET"); err != nil || !as1.sawSecret("cs-ORIGINAL-SECRET") {
		t.Fatalf("first connect: %v", err)
	}
	// Reconnect at the same server: the sealed secret is reused.
	as1.saw = nil
	if err := connect(""); err != nil || !as1.sawSecret("cs-ORIGINAL-SECRET") {
		t.Fatalf("reconnect at the same server: %v, secret reused %v", err, as1.sawSecret("cs-ORIGINAL-SECRET"))
	}
	// The metadata now names another authorization server.
	asURL.Store(as2.srv.URL)
	_ = connect("")
	if as2.sawSecret("cs-ORIGINAL-SECRET") {
		t.Fatal("Reconnect sent the client secret entered for one authorization server to another")
	}
}
