package vault

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	creds := []Credential{
		{ID: "host", Prefix: "https://api.x.com", Type: TypeBearer},
		{ID: "v1", Prefix: "https://api.x.com/v1", Type: TypeBearer},
		{ID: "v1-orders", Prefix: "https://api.x.com/v1/orders/", Type: TypeBearer},
		{ID: "plain", Prefix: "http://plain.x.com/", Type: TypeBearer},
		{ID: "port", Prefix: "https://port.x.com:8443/mcp", Type: TypeBearer},
		{ID: "first", Prefix: "https://dup.x.com/a", Type: TypeBearer},
		{ID: "second", Prefix: "https://dup.x.com/a/", Type: TypeBearer},
		{ID: "broken", Prefix: "https://user:pw@broken.x.com/", Type: TypeBearer},
	}
	tests := []struct {
		url  string
		want string // "" for no match
	}{
		{"https://api.x.com/v1/orders/17", "v1-orders"},
		{"https://api.x.com/v1/orders", "v1-orders"},
		{"https://api.x.com/v1/ordersx", "v1"},
		{"https://api.x.com/v1", "v1"},
		{"https://api.x.com/v1/", "v1"},
		{"https://api.x.com/v10", "host"},
		{"https://api.x.com/", "host"},
		{"https://API.X.COM:443/v1?q=1", "v1"},
		{"https://api.x.com/v1/../admin", "host"},
		{"https://api.x.com/v1/%2e%2e/admin", "host"},
		{"http://api.x.com/v1", ""},
		{"https://api.x.com:8443/v1", ""},
		{"https://api.x.com.evil.com/v1", ""},
		{"https://evilapi.x.com/v1", ""},
		{"http://plain.x.com:80/anything", "plain"},
		{"https://plain.x.com/anything", ""},
		{"https://port.x.com:8443/mcp/s/1", "port"},
		{"https://port.x.com/mcp", ""},
		{"https://dup.x.com/a/b", "first"},
		{"https://broken.x.com/", ""},
		{"not a url", ""},
		{"/v1/relative", ""},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			got, ok := Match(creds, tc.url)
			if ok != (tc.want != "") || got.ID != tc.want {
				t.Fatalf("Match(%q) = %q, %v; want %q", tc.url, got.ID, ok, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := Credential{ID: "c", Prefix: "https://api.x.com/v1", Type: TypeBearer}
	with := func(f func(*Credential)) Credential { c := ok; f(&c); return c }
	tests := []struct {
		name      string
		cred      Credential
		wantField string // "" for valid
		wantText  string
	}{
		{"bearer", ok, "", ""},
		{"header", with(func(c *Credential) { c.Type, c.HeaderName = TypeHeader, "X-Api-Key" }), "", ""},
		{"basic", with(func(c *Credential) { c.Type, c.Username = TypeBasic, "ops" }), "", ""},
		{"no prefix", with(func(c *Credential) { c.Prefix = "" }), "prefix", "required"},
		{"relative prefix", with(func(c *Credential) { c.Prefix = "/v1" }), "prefix", "http:// or https://"},
		{"ftp prefix", with(func(c *Credential) { c.Prefix = "ftp://x.com/" }), "prefix", "http:// or https://"},
		{"user info", with(func(c *Credential) { c.Prefix = "https://u:p@x.com/" }), "prefix", "user info"},
		{"query", with(func(c *Credential) { c.Prefix = "https://x.com/v1?key=1" }), "prefix", "query"},
		{"fragment", with(func(c *Credential) { c.Prefix = "https://x.com/v1#a" }), "prefix", "fragment"},
		{"dot segments", with(func(c *Credential) { c.Prefix = "https://x.com/v1/../v2" }), "prefix", "'..'"},
		{"long prefix", with(func(c *Credential) { c.Prefix = "https://x.com/" + strings.Repeat("a", MaxPrefixLen) }), "prefix", "at most 2048"},
		{"unknown type", with(func(c *Credential) { c.Type = "oauth" }), "type", "\"oauth\""},
		{"header without name", with(func(c *Credential) { c.Type = TypeHeader }), "header_name", "required"},
		{"header bad token", with(func(c *Credential) { c.Type, c.HeaderName = TypeHeader, "X Key" }), "header_name", "not a valid"},
		{"hop-by-hop header", with(func(c *Credential) { c.Type, c.HeaderName = TypeHeader, "connection" }), "header_name", "connection"},
		{"framing header", with(func(c *Credential) { c.Type, c.HeaderName = TypeHeader, "Content-Length" }), "header_name", "Content-Length"},
		{"long header", with(func(c *Credential) { c.Type, c.HeaderName = TypeHeader, strings.Repeat("x", 129) }), "header_name", "at most 128"},
		{"header name on bearer", with(func(c *Credential) { c.HeaderName = "X-Key" }), "header_name", "only for type header"},
		{"basic without user", with(func(c *Credential) { c.Type = TypeBasic }), "username", "required"},
		{"basic colon", with(func(c *Credential) { c.Type, c.Username = TypeBasic, "a:b" }), "username", "':'"},
		{"username on bearer", with(func(c *Credential) { c.Username = "ops" }), "username", "only for type basic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldError(t, tc.cred.Validate(), tc.wantField, tc.wantText)
		})
	}
}

func TestValidateSecret(t *testing.T) {
	tests := []struct{ name, secret, wantText string }{
		{"ok", "tok_123", ""},
		{"empty", "", "required"},
		{"line break", "tok\r\nX-Evil: 1", "line breaks"},
		{"padded", " tok", "spaces"},
		{"too long", strings.Repeat("a", MaxSecretLen+1), "at most 8192"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			field := "secret"
			if tc.wantText == "" {
				field = ""
			}
			assertFieldError(t, ValidateSecret(tc.secret), field, tc.wantText)
		})
	}
}

func assertFieldError(t *testing.T, err error, field, text string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("valid input refused: %v", err)
		}
		return
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != field || !strings.Contains(err.Error(), text) {
		t.Fatalf("error = %v, want a %s error containing %q", err, field, text)
	}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name   string
		cred   Credential
		header string
		want   string
	}{
		{"bearer", Credential{Type: TypeBearer}, "Authorization", "Bearer s3cret"},
		{"header", Credential{Type: TypeHeader, HeaderName: "x-api-key"}, "X-Api-Key", "s3cret"},
		{"basic", Credential{Type: TypeBasic, Username: "ops"}, "Authorization", "Basic b3BzOnMzY3JldA=="},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Header.Set(tc.header, "guest-chosen value")
			Apply(req, tc.cred, "s3cret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if vals := got.Values(tc.header); len(vals) != 1 || vals[0] != tc.want {
				t.Fatalf("server saw %s: %q, want exactly %q", tc.header, vals, tc.want)
			}
		})
	}
}
