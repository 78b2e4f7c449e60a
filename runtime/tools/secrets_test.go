package tools

import (
	"net/url"
	"strings"
	"testing"
)

// Fake credentials, built from pieces so no scanner mistakes the source for a
// leak; each has the shape of the real thing.
var (
	fakeJWT       = "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	fakeGitHub    = "ghp" + "_" + strings.Repeat("A1b2C3d4", 4) + "Zz9y"
	fakeGitHubPAT = "github" + "_pat_" + strings.Repeat("11ABCDEFG0", 3) + "_" + strings.Repeat("xYz123", 5)
	fakeOpenAI    = "sk" + "-proj-" + strings.Repeat("Ab3dE", 8)
	fakeAnthropic = "sk" + "-ant-api03-" + strings.Repeat("Qw3_rT-y", 6)
	fakeSlack     = "xox" + "b-" + "123456789012-1234567890123-" + strings.Repeat("aBc", 8)
	fakeAWS       = "AKI" + "A" + "IOSFODNN7EXAMPLE"
	fakeGoogle    = "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
)

func TestURLCredentialFindsTokens(t *testing.T) {
	tests := []struct{ name, url, says string }{
		{"access_token in fragment", "https://mcp.example.com/#access_token=abc", `the URL carries a secret in its fragment parameter "access_token"; `},
		{"token in fragment after others", "https://mcp.example.com/mcp#state=x&id_token=abc", `fragment parameter "id_token"`},
		{"JWT in fragment", "https://mcp.example.com/#" + fakeJWT, "a JWT in its fragment"},
		{"JWT as fragment value", "https://mcp.example.com/#session=" + fakeJWT, `a JWT in its fragment parameter "session"`},
		{"JWT in a harmless query parameter", "https://mcp.example.com/mcp?session=" + fakeJWT, `a JWT in its query parameter "session"`},
		{"JWT as a bare query", "https://mcp.example.com/mcp?" + fakeJWT, "a JWT in its query; "},
		{"JWT in the path", "https://mcp.example.com/s/" + fakeJWT + "/mcp", "a JWT in its path"},
		{"GitHub token in query", "https://mcp.example.com/?q=" + fakeGitHub, `a GitHub token in its query parameter "q"`},
		{"GitHub token in path", "https://mcp.example.com/" + fakeGitHub + "/mcp", "a GitHub token in its path"},
		{"GitHub fine-grained token", "https://mcp.example.com/?x=" + fakeGitHubPAT, "a GitHub token"},
		{"gho, ghu, ghs, ghr", "https://mcp.example.com/" + strings.Replace(fakeGitHub, "ghp", "ghs", 1), "a GitHub token"},
		{"OpenAI key in query", "https://mcp.example.com/?upstream=" + fakeOpenAI, `an API key in its query parameter "upstream"`},
		{"Anthropic key in path", "https://mcp.example.com/v1/" + fakeAnthropic, "an API key in its path"},
		{"Slack token", "https://mcp.example.com/slack?t=" + fakeSlack, "a Slack token"},
		{"AWS access key ID", "https://mcp.example.com/aws/" + fakeAWS + "/mcp", "an AWS access key ID in its path"},
		{"Google API key", "https://mcp.example.com/?g=" + fakeGoogle, "a Google API key"},
		{"Bearer value, escaped", "https://mcp.example.com/?h=Bearer%20" + fakeGitHub, "a GitHub token"},
		{"percent-escaped path", "https://mcp.example.com/" + url.PathEscape(fakeJWT), "a JWT in its path"},
		{"malformed escape does not hide a name", "https://mcp.example.com/?token=%zz", `query parameter "token"`},
		{"semicolon-separated", "https://mcp.example.com/?a=1;api_key=abc", `query parameter "api_key"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			got := urlCredential(u)
			if !strings.Contains(got, tt.says) {
				t.Errorf("urlCredential(%s) = %q, want it to say %q", tt.url, got, tt.says)
			}
			for _, secret := range []string{fakeJWT, fakeGitHub, fakeGitHubPAT, fakeOpenAI, fakeAnthropic, fakeSlack, fakeAWS, fakeGoogle, "abc"} {
				if strings.Contains(got, secret) {
					t.Errorf("urlCredential repeats the secret: %q", got)
				}
			}
		})
	}
}

func TestURLCredentialPassesOrdinaryURLs(t *testing.T) {
	for _, s := range []string{
		"https://api.github.com/repos/o/r",
		"https://api.github.com/repos/o/r/issues?state=open&per_page=100",
		"https://mcp.example.com/orders",
		"https://mcp.example.com/orders?region=eu&page=2",
		"https://mcp.example.com/sessions/3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b/mcp",
		"https://mcp.example.com/objects/01HZX3Q9K8V7N6M5L4J3H2G1F0",
		"https://mcp.example.com/docs#token-refresh",
		"https://mcp.example.com/docs#section=overview&page=2",
		"https://mcp.example.com/tokens/list",
		"https://mcp.example.com/sk-learn-nearest-neighbors-classification",
		"https://mcp.example.com/teams/sk-Slovakia-Team2024-Ops",
		"https://mcp.example.com/docs/sk-SK_Documentation_v2024",
		"https://mcp.example.com/task-runner/ghp_",
		"https://mcp.example.com/?q=eyJ",
		"https://mcp.example.com/AKIA",
		"https://mcp.example.com/v1/models/claude-3-5-sonnet-20241022",
		"https://mcp.example.com/c/" + strings.Repeat("0123456789abcdef", 4),
		"http://127.0.0.1:8080",
	} {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := urlCredential(u); got != "" {
			t.Errorf("urlCredential(%s) = %q, want none", s, got)
		}
	}
}

// Through Parse, a token-shaped value is reported under the URL's JSON path
// with the vault advice, and never repeated.
func TestParseRejectsTokenShapedURLs(t *testing.T) {
	tests := []struct{ name, config, field, detail string }{
		{"fragment token", mcpWith(`"url": "https://mcp.example.com/#access_token=abc"`), "mcp_servers[0].url",
			`the URL carries a secret in its fragment parameter "access_token"; ` + credentialDetail},
		{"JWT in query value", mcpWith(`"url": "https://mcp.example.com/mcp?session=` + fakeJWT + `"`), "mcp_servers[0].url",
			`the URL carries what looks like a JWT in its query parameter "session"; ` + credentialDetail},
		{"GitHub token in path", mcpWith(`"url": "https://mcp.example.com/` + fakeGitHub + `/mcp"`), "mcp_servers[0].url",
			"the URL carries what looks like a GitHub token in its path; " + credentialDetail},
		{"AWS key in origin query", fnWith(`"origins": ["https://api.github.com", "https://b.example.com?k=` + fakeAWS + `"]`), "functions[0].origins[1]",
			`the URL carries what looks like an AWS access key ID in its query parameter "k"; ` + credentialDetail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.config)
			if len(got) != 1 {
				t.Fatalf("got %d problems %v, want one at %q", len(got), got, tt.field)
			}
			g := got[0]
			if g.Field != tt.field || g.Code != "credential_in_config" || g.Detail != tt.detail {
				t.Errorf("got %+v, want field %q, credential_in_config, %q", g, tt.field, tt.detail)
			}
		})
	}
	if got := problems(t, mcpWith(`"url": "https://api.github.com/repos/o/r#readme"`)); got != nil {
		t.Errorf("an ordinary URL was refused: %v", got)
	}
}
