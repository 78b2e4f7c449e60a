package runtime_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/runtime/oauth/oauthtest"
	"github.com/subako/subako/runtime/vault"
)

const oauthRedirect = "http://127.0.0.1:9/vaults/oauth/callback"

// oauthWorld is a Subako runtime with a session whose version grants the
// test server's MCP endpoint, and a vault bound to the session.
type oauthWorld struct {
	rt      *runtime.Runtime
	owner   runtime.Principal
	agent   runtime.Principal // the session
	session string
	vault   string
	srv     *oauthtest.Server
	db      *models.DB
	keys    *vault.Keyring
	log     *logtest.Buffer // everything the runtime logged
}

func newOAuthWorld(t *testing.T, opts oauthtest.Options) *oauthWorld {
	t.Helper()
	ctx := t.Context()
	opts.AutoApprove = true
	w := &oauthWorld{srv: oauthtest.Start(t, opts), db: modelstest.Open(t)}
	w.keys, _ = vault.NewKeyringFromSecret(strings.Repeat("k", 40))
	w.log = &logtest.Buffer{}
	w.rt = runtime.New(w.db, runtime.Options{AllowPrivateEgress: true, Keys: w.keys,
		Log: slog.New(slog.NewTextHandler(w.log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(w.rt.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := w.rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", "correct-horse-battery")
	must(err)
	w.owner, err = w.rt.PrincipalForEmail(ctx, "owner@example.com")
	must(err)
	v, err := w.rt.VaultCreate(ctx, w.owner, runtime.VaultInput{Name: "acme"})
	must(err)
	w.vault = v.ID
	name := "oauth"
	a, err := w.rt.AgentCreate(ctx, w.owner, runtime.AgentInput{Name: &name})
	must(err)
	cfg, _ := json.Marshal(map[string]any{"mcp_servers": []any{map[string]any{"name": "srv", "url": w.srv.MCPURL, "default_policy": "allow"}}})
	ver, err := w.rt.VersionCreate(ctx, w.owner, runtime.VersionCreateInput{Agent: a.ID, Config: cfg})
	must(err)
	_, err = w.rt.VersionPublish(ctx, w.owner, ver.ID)
	must(err)
	s, err := w.rt.SessionCreate(ctx, w.owner, runtime.SessionCreateInput{Version: ver.ID, Vaults: []string{v.ID}})
	must(err)
	w.session, w.agent = s.ID, runtime.SessionPrincipal(s.ID, "")
	return w
}

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorize starts Connect with OAuth and lets the server approve it,
// returning the state and code the browser would bring back.
func (w *oauthWorld) authorize(t *testing.T, web string, in runtime.OAuthConnectInput) (state, code string) {
	t.Helper()
	in.Vault = w.vault
	if in.Prefix == "" {
		in.Prefix = w.srv.MCPURL
	}
	to, err := w.rt.OAuthConnectStart(t.Context(), w.owner, web, oauthRedirect, in)
	if err != nil {
		t.Fatalf("connect start: %v", err)
	}
	au, _ := url.Parse(to)
	q := au.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != w.srv.ResourceIdent || q.Get("redirect_uri") != oauthRedirect {
		t.Fatalf("authorization URL lacks PKCE S256, resource or the fixed redirect URI: %s", to)
	}
	resp, err := noFollow.Get(to)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Query().Get("code") == "" {
		t.Fatalf("authorization did not come back with a code: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return back.Query().Get("state"), back.Query().Get("code")
}

func (w *oauthWorld) connect(t *testing.T, in runtime.OAuthConnectInput) {
	t.Helper()
	state, code := w.authorize(t, "web-1", in)
	if _, err := w.rt.OAuthConnectFinish(t.Context(), w.owner, "web-1", state, code, "", ""); err != nil {
		t.Fatalf("connect finish: %v", err)
	}
}

func (w *oauthWorld) call(t *testing.T, text string) runtime.ToolCallView {
	t.Helper()
	wait := 20.0
	c, err := w.rt.ToolCallCreate(t.Context(), w.agent, runtime.ToolCallInput{Session: w.session, Tool: "mcp__srv__echo",
		Input: json.RawMessage(`{"text":"` + text + `"}`), WaitSeconds: &wait})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return c
}

func (w *oauthWorld) credential(t *testing.T) runtime.CredentialView {
	t.Helper()
	cs, err := w.rt.CredentialList(t.Context(), w.owner, w.vault)
	if err != nil || len(cs) != 1 {
		t.Fatalf("credentials: %+v %v", cs, err)
	}
	return cs[0]
}

// The whole life of a connected credential: connect with PKCE and dynamic
// registration, call, expiry answered by one refresh on the 401, a revoked
// grant failing with credential_expired naming the vault and prefix, and a
// reconnect that works again without registering a second client.
func TestOAuthConnectRefreshRevokeReconnect(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{})
	w.connect(t, runtime.OAuthConnectInput{})
	cv := w.credential(t)
	if cv.Type != "oauth" || cv.Status != "connected" || cv.ExpiresAt == nil || cv.Registration != "dynamic" || cv.Issuer != w.srv.Issuer {
		t.Fatalf("after connect: %+v", cv)
	}
	if c := w.call(t, "one"); c.Status != runtime.CallSucceeded {
		t.Fatalf("first call: %+v", c)
	}

	w.srv.ExpireAccessTokens()
	before := w.srv.Stats()
	if c := w.call(t, "two"); c.Status != runtime.CallSucceeded {
		t.Fatalf("call after expiry: %+v", c)
	}
	if got := w.srv.Stats().Refreshes - before.Refreshes; got != 1 {
		t.Fatalf("refreshes after one expiry = %d, want 1", got)
	}

	w.srv.RevokeRefreshTokens()
	w.srv.ExpireAccessTokens()
	c := w.call(t, "three")
	if c.Status != runtime.CallFailed || !strings.Contains(c.Error, "credential_expired") ||
		!strings.Contains(c.Error, "vault acme") || !strings.Contains(c.Error, w.srv.MCPURL) {
		t.Fatalf("call after revocation: status %s, error %q; want credential_expired naming vault acme and the prefix", c.Status, c.Error)
	}
	if cv := w.credential(t); cv.Status != "needs_reconnecting" || cv.StatusDetail == "" {
		t.Fatalf("after a refused refresh the credential says %q (%q), want needs_reconnecting with a reason", cv.Status, cv.StatusDetail)
	}

	// The server's tools stay on the session, with why they fail.
	rep, err := w.rt.SessionToolsReport(t.Context(), w.owner, w.session, false)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, tool := range rep.Tools {
		listed = listed || tool.Name == "mcp__srv__echo"
	}
	if !listed || len(rep.Problems) != 1 || !rep.Problems[0].Stale || !strings.Contains(rep.Problems[0].Error, "credential_expired") {
		t.Fatalf("session tools after revocation: echo listed %v, problems %+v; want echo kept and a credential_expired reason", listed, rep.Problems)
	}

	regs := w.srv.Stats().Registrations
	w.connect(t, runtime.OAuthConnectInput{})
	if w.srv.Stats().Registrations != regs {
		t.Fatal("reconnecting registered a second client")
	}
	if cv := w.credential(t); cv.Status != "connected" {
		t.Fatalf("after reconnect: %+v", cv)
	}
	if c := w.call(t, "four"); c.Status != runtime.CallSucceeded {
		t.Fatalf("call after reconnect: %+v", c)
	}
	if rep, _ := w.rt.SessionToolsReport(t.Context(), w.owner, w.session, false); len(rep.Problems) != 0 {
		t.Fatalf("after reconnect the session still reports %+v", rep.Problems)
	}
}

// A token with less than a minute left is replaced before the call goes
// out, so the server never sees it refused.
func TestOAuthRefreshBeforeExpiry(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{AccessTTL: 30 * time.Second})
	w.connect(t, runtime.OAuthConnectInput{})
	before := w.srv.Stats()
	if c := w.call(t, "x"); c.Status != runtime.CallSucceeded {
		t.Fatalf("call: %+v", c)
	}
	st := w.srv.Stats()
	if st.Refreshes-before.Refreshes < 1 || st.Unauthorized != before.Unauthorized {
		t.Fatalf("refreshes %d, 401s %d: want a refresh before the call and no 401", st.Refreshes-before.Refreshes, st.Unauthorized-before.Unauthorized)
	}
}

// Many calls finding the token expired at once make one refresh: a second
// would spend the rotated refresh token and break the grant.
func TestOAuthConcurrentRefreshCoalesced(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{})
	w.connect(t, runtime.OAuthConnectInput{})
	w.call(t, "warm")
	w.srv.ExpireAccessTokens()
	before := w.srv.Stats().Refreshes
	var wg sync.WaitGroup
	calls := make([]runtime.ToolCallView, 6)
	for i := range calls {
		wg.Go(func() { calls[i] = w.call(t, "c") })
	}
	wg.Wait()
	for i, c := range calls {
		if c.Status != runtime.CallSucceeded {
			t.Fatalf("call %d: %s %q", i, c.Status, c.Error)
		}
	}
	if got := w.srv.Stats().Refreshes - before; got != 1 {
		t.Fatalf("%d refreshes for one expiry, want 1", got)
	}
	if cv := w.credential(t); cv.Status != "connected" {
		t.Fatalf("after concurrent refresh: %+v", cv)
	}
}

// Two servers over one database (two runtimes here) refreshing the same
// credential at once: the version claim makes one refresh and the other
// uses its token.
func TestOAuthRefreshAcrossProcesses(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{})
	w.connect(t, runtime.OAuthConnectInput{})
	other := runtime.New(w.db, runtime.Options{AllowPrivateEgress: true, Keys: w.keys})
	t.Cleanup(other.Close)
	w.call(t, "warm")
	w.srv.ExpireAccessTokens()
	before := w.srv.Stats().Refreshes
	var wg sync.WaitGroup
	results := make([]runtime.ToolCallView, 4)
	for i := range results {
		rt := w.rt
		if i%2 == 1 {
			rt = other
		}
		wg.Go(func() {
			wait := 20.0
			c, err := rt.ToolCallCreate(context.Background(), w.agent, runtime.ToolCallInput{Session: w.session, Tool: "mcp__srv__echo",
				Input: json.RawMessage(`{"text":"p"}`), WaitSeconds: &wait})
			if err != nil {
				t.Error(err)
			}
			results[i] = c
		})
	}
	wg.Wait()
	for i, c := range results {
		if c.Status != runtime.CallSucceeded {
			t.Fatalf("call %d: %s %q", i, c.Status, c.Error)
		}
	}
	if got := w.srv.Stats().Refreshes - before; got != 1 {
		t.Fatalf("%d refreshes across two runtimes, want 1", got)
	}
}

// The state is single-use and belongs to the browser session that started
// the flow; a server without registration needs a client id.
func TestOAuthStateBoundAndSingleUse(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{DisableRegistration: true,
		Clients: []oauthtest.Client{{ID: "subako-test", Secret: "cs-very-secret", RedirectURIs: []string{oauthRedirect}}}})
	_, err := w.rt.OAuthConnectStart(t.Context(), w.owner, "web-1", oauthRedirect, runtime.OAuthConnectInput{Vault: w.vault, Prefix: w.srv.MCPURL})
	if e, ok := runtime.AsError(err); !ok || e.Field != "client_id" || !strings.Contains(e.Detail, oauthRedirect) {
		t.Fatalf("no registration and no client id: %v; want an error on client_id naming the redirect URI", err)
	}
	in := runtime.OAuthConnectInput{ClientID: "subako-test", ClientSecret: "cs-very-secret"}

	state, code := w.authorize(t, "web-1", in)
	if _, err := w.rt.OAuthConnectFinish(t.Context(), w.owner, "web-other", state, code, "", ""); err == nil {
		t.Fatal("a state finished from another browser session")
	}
	if _, err := w.rt.OAuthConnectFinish(t.Context(), w.owner, "web-1", state, code, "", ""); err == nil {
		t.Fatal("a state was used twice")
	}
	state, code = w.authorize(t, "web-1", in)
	if _, err := w.rt.OAuthConnectFinish(t.Context(), w.owner, "web-1", state, code, "", ""); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if cv := w.credential(t); cv.ClientID != "subako-test" || cv.Registration != "manual" {
		t.Fatalf("credential: %+v", cv)
	}
	if c := w.call(t, "hi"); c.Status != runtime.CallSucceeded {
		t.Fatalf("call: %+v", c)
	}
}

// Client credentials: checked when set, then refreshed by getting a new
// token; a wrong secret is refused on the secret field.
func TestOAuthClientCredentials(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{Clients: []oauthtest.Client{{ID: "m2m", Secret: "m2m-secret-value"}}})
	in := runtime.CredentialInput{Vault: w.vault, Prefix: w.srv.MCPURL, Type: "client_credentials", TokenURL: w.srv.TokenURL, ClientID: "m2m", Secret: "wrong-secret"}
	_, err := w.rt.CredentialSet(t.Context(), w.owner, in)
	if e, ok := runtime.AsError(err); !ok || e.Field != "secret" {
		t.Fatalf("wrong client secret: %v, want an error on secret", err)
	}
	in.Secret = "m2m-secret-value"
	cv, err := w.rt.CredentialSet(t.Context(), w.owner, in)
	if err != nil || cv.Status != "connected" || cv.TokenURL != w.srv.TokenURL {
		t.Fatalf("set: %+v %v", cv, err)
	}
	if c := w.call(t, "m"); c.Status != runtime.CallSucceeded {
		t.Fatalf("call: %+v", c)
	}
	w.srv.ExpireAccessTokens()
	before := w.srv.Stats().ClientCredentials
	if c := w.call(t, "n"); c.Status != runtime.CallSucceeded {
		t.Fatalf("call after expiry: %+v", c)
	}
	if w.srv.Stats().ClientCredentials-before != 1 {
		t.Fatal("an expired client-credentials token was not replaced by one new token")
	}
	_, err = w.rt.CredentialSet(t.Context(), w.owner, runtime.CredentialInput{Vault: w.vault, Prefix: w.srv.MCPURL, Type: "oauth"})
	if e, ok := runtime.AsError(err); !ok || e.Field != "type" {
		t.Fatalf("type oauth through Credential.set: %v, want a refusal on type", err)
	}
}

// No token, code, verifier or client secret the server issued or saw is in
// the database's plaintext, an API answer, an Action or the runtime's log.
func TestOAuthSecretsNeverInTheClear(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{Clients: []oauthtest.Client{{ID: "m2m", Secret: "m2m-secret-value"}}})
	w.connect(t, runtime.OAuthConnectInput{})
	w.call(t, "a")
	w.srv.ExpireAccessTokens()
	w.call(t, "b")
	if _, err := w.rt.CredentialSet(t.Context(), w.owner, runtime.CredentialInput{Vault: w.vault, Prefix: w.srv.APIURL,
		Type: "client_credentials", TokenURL: w.srv.TokenURL, ClientID: "m2m", Secret: "m2m-secret-value"}); err != nil {
		t.Fatal(err)
	}
	// A refused refresh logs its reason too.
	w.srv.RevokeRefreshTokens()
	w.srv.ExpireAccessTokens()
	if c := w.call(t, "c"); c.Status != runtime.CallFailed {
		t.Fatalf("call after revocation: %+v", c)
	}
	var haystack strings.Builder
	haystack.WriteString(w.log.String())
	if !strings.Contains(w.log.String(), "needs reconnecting") {
		t.Fatal("the runtime logged nothing about the refused refresh; the log search would prove nothing")
	}
	for _, table := range []string{"credentials", "oauth_pending", "actions", "tool_calls", "mcp_discoveries"} {
		var rows []map[string]any
		if err := w.db.Table(table).Find(&rows).Error; err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		b, _ := json.Marshal(rows)
		haystack.Write(b)
	}
	vv, _ := w.rt.VaultGet(t.Context(), w.owner, w.vault)
	b, _ := json.Marshal(vv)
	haystack.Write(b)
	secrets := w.srv.Tokens()
	if len(secrets) < 6 {
		t.Fatalf("the server recorded only %d secrets", len(secrets))
	}
	for _, s := range secrets {
		if len(s.Value) >= 8 && strings.Contains(haystack.String(), s.Value) {
			t.Errorf("a %s is in the clear in the database or an answer", s.Kind)
		}
	}
}
