package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/fntest"
	"github.com/subako/subako/runtime/oauth/oauthtest"
)

// A function's http_fetch to its granted origin carries a client-credentials
// token, and a token the API stops accepting is replaced on the 401 and the
// fetch sent again, without the function seeing the 401.
func TestOAuthClientCredentialsForFunctionOrigin(t *testing.T) {
	ctx := t.Context()
	srv := oauthtest.Start(t, oauthtest.Options{Clients: []oauthtest.Client{{ID: "m2m", Secret: "m2m-secret-value"}}})
	// A GitHub-shaped API that accepts what the test authorization server's
	// own API accepts.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check, _ := http.NewRequest(http.MethodGet, srv.APIURL, nil)
		check.Header.Set("Authorization", r.Header.Get("Authorization"))
		resp, err := http.DefaultClient.Do(check)
		if err != nil || resp.StatusCode != http.StatusOK {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		resp.Body.Close()
		_ = json.NewEncoder(w).Encode(map[string]any{"full_name": "acme/orders", "description": "granted"})
	}))
	defer api.Close()

	mods := fntest.Build(t)
	e, err := fn.New(context.Background(), fn.Config{DataDir: mods.DataDir, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	rt := runtime.New(modelstest.Open(t), runtime.Options{AllowPrivateEgress: true})
	rt.SetFunctionEngine(e)
	t.Cleanup(func() { rt.Close(); _ = e.Close(context.Background()) })
	wasm, manifest := mods.Package(t, "github")
	if _, err := rt.FunctionInstall(ctx, runtime.System, runtime.FunctionInstallInput{Manifest: manifest, Wasm: wasm}); err != nil {
		t.Fatal(err)
	}
	v, err := rt.VaultCreate(ctx, runtime.System, runtime.VaultInput{Name: "m2m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CredentialSet(ctx, runtime.System, runtime.CredentialInput{Vault: v.ID, Prefix: api.URL, Type: "client_credentials",
		TokenURL: srv.TokenURL, ClientID: "m2m", Secret: "m2m-secret-value"}); err != nil {
		t.Fatal(err)
	}
	name := "fnoauth"
	a, err := rt.AgentCreate(ctx, runtime.System, runtime.AgentInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"functions": []any{map[string]any{"name": "gh", "package": "github", "version": "1.0.0",
		"origins": []string{api.URL}, "default_policy": "allow"}}})
	ver, err := rt.VersionCreate(ctx, runtime.System, runtime.VersionCreateInput{Agent: a.ID, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.VersionPublish(ctx, runtime.System, ver.ID); err != nil {
		t.Fatal(err)
	}
	s, err := rt.SessionCreate(ctx, runtime.System, runtime.SessionCreateInput{Version: ver.ID, Vaults: []string{v.ID}})
	if err != nil {
		t.Fatal(err)
	}
	call := func() runtime.ToolCallView {
		wait := 60.0
		c, err := rt.ToolCallCreate(ctx, runtime.SessionPrincipal(s.ID, ""), runtime.ToolCallInput{Session: s.ID, Tool: "fn__gh__get_repo",
			Input: json.RawMessage(`{"owner":"acme","repo":"orders","api_url":"` + api.URL + `"}`), WaitSeconds: &wait})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := call(); c.Status != runtime.CallSucceeded || !strings.Contains(string(c.Output), "acme/orders") {
		t.Fatalf("first call: %s %q %s", c.Status, c.Error, c.Output)
	}
	srv.ExpireAccessTokens()
	before := srv.Stats().ClientCredentials
	if c := call(); c.Status != runtime.CallSucceeded {
		t.Fatalf("call after the token was refused: %s %q", c.Status, c.Error)
	}
	if srv.Stats().ClientCredentials-before != 1 {
		t.Fatal("the refused token was not replaced by one new client-credentials token")
	}
}
