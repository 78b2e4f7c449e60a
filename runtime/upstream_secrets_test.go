package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/vault"
)

// Every form in which a server could repeat a credential it was sent is cut
// out: the header value, the token after its scheme, a Basic header's
// decoded user:password and password, and each as a JSON string carries it.
func TestHideCredentials(t *testing.T) {
	for _, tc := range []struct {
		cred   vault.Credential
		secret string
		echoes []string
	}{
		{vault.Credential{Type: vault.TypeBearer}, "tok-1234567", []string{"Bearer tok-1234567", "token tok-1234567 refused"}},
		{vault.Credential{Type: vault.TypeHeader, HeaderName: "X-Api-Key"}, `k/"q\uff`, []string{`key k/"q\uff`, `{"key": "k/\"q\\uff"}`}},
		{vault.Credential{Type: vault.TypeBasic, Username: "ann"}, "pa55word", []string{"Basic YW5uOnBhNTV3b3Jk", "ann:pa55word", "password pa55word"}},
	} {
		attach := func(req *http.Request) { vault.Apply(req, tc.cred, tc.secret) }
		secrets := credentialValues(context.Background(), attach)
		for _, echo := range tc.echoes {
			got := hideCredentials(echo, secrets)
			if strings.Contains(got, tc.secret) || strings.Contains(got, "YW5uOnBhNTV3b3Jk") || !strings.Contains(got, credentialHidden) {
				t.Errorf("%s: %q became %q", tc.cred.Type, echo, got)
			}
		}
	}
	if got := credentialValues(context.Background(), func(*http.Request) {}); len(got) != 0 {
		t.Errorf("no credential: %q", got)
	}
	out := hideCredentialsInJSON(json.RawMessage(`{"text":"a tok-1234567 b"}`), []string{"tok-1234567"})
	if string(out) != `{"text":"a [credential] b"}` {
		t.Errorf("hideCredentialsInJSON: %s", out)
	}
}
