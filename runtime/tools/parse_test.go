package tools

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// problems parses data and returns its field errors; a nil error gives nil.
func problems(t *testing.T, data string) []FieldError {
	t.Helper()
	_, err := Parse([]byte(data), cat)
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse error %v is not a *ValidationError", err)
	}
	return ve.Errors
}

// Fragments of valid grants, so each case below breaks one thing.
const (
	okMCP     = `{"name": "orders", "url": "https://mcp.example.com/orders", "default_policy": "ask"}`
	okSandbox = `{"name": "workbench", "environment": {"type": "platform", "release": "2026"}, "network": {"type": "none"}, "default_policy": "allow"}`
	okFn      = `{"name": "gh", "package": "github", "version": "1.0.0", "origins": ["https://api.github.com"], "default_policy": "allow"}`
)

func mcpWith(field string) string {
	return `{"mcp_servers": [{"name": "orders", "default_policy": "ask", ` + field + `}]}`
}

func fnWith(field string) string {
	return `{"functions": [{"name": "gh", "package": "github", "version": "1.0.0", "default_policy": "allow", ` + field + `}]}`
}

func sandboxWith(fields string) string {
	return `{"sandboxes": [{"name": "workbench", "default_policy": "allow", ` + fields + `}]}`
}

const env2026 = `"environment": {"type": "platform", "release": "2026"}`
const netNone = `"network": {"type": "none"}`

// rejectCases each break one rule once: the config, and the one problem a
// person should see under the field.
var rejectCases = []struct {
	name, config, field, code string
	detail                    string // checked when not empty
}{
	{"malformed JSON", "{\n  \"skills\": [,]\n}", "", "invalid_json", "config is not valid JSON at line 2, column 14 (byte 15): invalid character ',' looking for beginning of value"},
	{"truncated JSON", `{"skills": [`, "", "invalid_json", "config is not valid JSON at line 1, column 13 (byte 12): it ends early"},
	{"trailing data", `{} {}`, "", "invalid_json", "config is not valid JSON at line 1, column 4 (byte 3): more data after the end of the config"},
	{"empty", ``, "", "invalid_json", "config is empty; send a JSON object such as {}"},
	{"not an object", `[]`, "", "invalid_type", "config must be an object; found an array"},
	{"unknown kind", `{"clients": []}`, "clients", "unknown_field",
		`unknown field "clients"; a config has mcp_servers, skills, sandboxes, functions, builtins and tools_as`},
	{"kind not a list", `{"skills": {}}`, "skills", "invalid_type", "skills must be an array; found an object"},
	{"unknown sandbox field", sandboxWith(env2026 + `, ` + netNone + `, "memory": 4096`), "sandboxes[0].memory", "unknown_field", ""},
	{"unknown nested field", sandboxWith(`"environment": {"type": "platform", "release": "2026", "image": "x"}, ` + netNone),
		"sandboxes[0].environment.image", "unknown_field", ""},
	{"field given twice", `{"skills": [{"name": "a", "name": "b", "skill": "refund-policy"}]}`, "skills[0].name", "duplicate_field", ""},
	{"headers", mcpWith(`"url": "https://mcp.example.com", "headers": {"Authorization": "Bearer s3cret"}`),
		"mcp_servers[0].headers", "credential_in_config", credentialDetail},
	{"Authorization at the top", `{"Authorization": "Bearer s3cret"}`, "Authorization", "credential_in_config", credentialDetail},
	{"API_KEY in a function", fnWith(`"API_KEY": "s3cret"`), "functions[0].API_KEY", "credential_in_config", credentialDetail},
	{"x-api-key", fnWith(`"x-api-key": "s3cret"`), "functions[0].x-api-key", "credential_in_config", credentialDetail},
	{"bearer in a skill", `{"skills": [{"name": "a", "skill": "refund-policy", "Bearer": "s3cret"}]}`, "skills[0].Bearer", "credential_in_config", ""},
	{"user info in url", mcpWith(`"url": "https://bob:s3cret@mcp.example.com"`), "mcp_servers[0].url", "credential_in_config", ""},
	{"token in url", mcpWith(`"url": "https://mcp.example.com/?access_token=s3cret"`), "mcp_servers[0].url", "credential_in_config",
		`the URL carries a secret in its query parameter "access_token"; ` + credentialDetail},
	{"upper-case Key in url", mcpWith(`"url": "https://mcp.example.com/?Key=s3cret"`), "mcp_servers[0].url", "credential_in_config", ""},
	{"sig in origin", fnWith(`"origins": ["https://a.example.com", "https://b.example.com?sig=s3cret"]`), "functions[0].origins[1]", "credential_in_config", ""},
	{"user info in origin", fnWith(`"origins": ["https://u:s3cret@api.github.com"]`), "functions[0].origins[0]", "credential_in_config", ""},
	{"url missing", `{"mcp_servers": [{"name": "orders", "default_policy": "ask"}]}`, "mcp_servers[0].url", "url_required", ""},
	{"url relative", mcpWith(`"url": "/orders"`), "mcp_servers[0].url", "invalid_url",
		"url must be an absolute http or https URL, such as https://mcp.example.com/orders"},
	{"url ftp", mcpWith(`"url": "ftp://mcp.example.com"`), "mcp_servers[0].url", "invalid_url", ""},
	{"url bad port", mcpWith(`"url": "https://mcp.example.com:70000/"`), "mcp_servers[0].url", "invalid_url", "url port must be between 1 and 65535"},
	{"url too long", mcpWith(`"url": "https://mcp.example.com/` + strings.Repeat("a", 2030) + `"`), "mcp_servers[0].url", "url_too_long",
		"url must be at most 2048 characters; it has 2054"},
	{"origin with path", fnWith(`"origins": ["https://api.github.com", "https://api.github.com/repos"]`), "functions[0].origins[1]", "invalid_origin", ""},
	{"origin with slash", fnWith(`"origins": ["https://api.github.com/"]`), "functions[0].origins[0]", "invalid_origin",
		"origin must have no path, query or fragment, not even a trailing /; give scheme://host[:port], such as https://api.github.com"},
	{"origin ftp", fnWith(`"origins": ["ftp://files.example.com"]`), "functions[0].origins[0]", "invalid_origin", ""},
	{"origin bare host", fnWith(`"origins": ["api.github.com"]`), "functions[0].origins[0]", "invalid_origin", ""},
	{"origin twice", fnWith(`"origins": ["https://api.github.com", "https://api.github.com"]`), "functions[0].origins[1]", "origin_duplicate", ""},
	{"origin not a string", fnWith(`"origins": [443]`), "functions[0].origins[0]", "invalid_type", "origins[0] must be a string; found a number"},
	{"name not a string", `{"skills": [{"name": 5, "skill": "refund-policy"}]}`, "skills[0].name", "invalid_type", "name must be a string; found a number"},
	{"name missing", `{"skills": [{"skill": "refund-policy"}]}`, "skills[0].name", "name_required", ""},
	{"name too long", `{"skills": [{"name": "` + strings.Repeat("s", 33) + `", "skill": "refund-policy"}]}`, "skills[0].name", "name_too_long", ""},
	{"name invalid", `{"sandboxes": [` + strings.Replace(okSandbox, "workbench", "work bench", 1) + `]}`, "sandboxes[0].name", "name_invalid", ""},
	{"name parent", `{"mcp_servers": [` + strings.Replace(okMCP, "orders", "parent", 1) + `]}`, "mcp_servers[0].name", "name_reserved", ""},
	{"name twice in a kind", `{"sandboxes": [` + okSandbox + `, ` + okSandbox + `]}`, "sandboxes[1].name", "name_duplicate",
		`name "workbench" is already used by another sandbox grant in this version`},
	{"unknown built-in", `{"builtins": [{"name": "shell"}]}`, "builtins[0].name", "unknown_builtin", ""},
	{"built-in twice", `{"builtins": [{"name": "session"}, {"name": "session"}]}`, "builtins[1].name", "name_duplicate", ""},
	{"built-in with policy", `{"builtins": [{"name": "session", "default_policy": "ask"}]}`, "builtins[0].default_policy", "policy_not_allowed",
		"built-ins have no policy: granting them is the decision"},
	{"skill with tool rules", `{"skills": [{"name": "a", "skill": "refund-policy", "tool_rules": {"read": "deny"}}]}`, "skills[0].tool_rules", "policy_not_allowed",
		"skills have no policy: granting them is the decision"},
	{"unknown skill", `{"skills": [{"name": "a", "skill": "nope"}]}`, "skills[0].skill", "unknown_skill", `no skill "nope" is installed`},
	{"skill missing", `{"skills": [{"name": "a"}]}`, "skills[0].skill", "skill_required", ""},
	{"default policy missing", `{"mcp_servers": [{"name": "orders", "url": "https://mcp.example.com"}]}`, "mcp_servers[0].default_policy", "policy_required", ""},
	{"default policy unknown", `{"mcp_servers": [` + strings.Replace(okMCP, `"ask"`, `"Allow"`, 1) + `]}`, "mcp_servers[0].default_policy", "invalid_policy",
		`default_policy must be allow, ask or deny; found "Allow"`},
	{"tool rule policy unknown", `{"mcp_servers": [` + okMCP + `, ` + mcpRules(`{"lookup": "maybe"}`) + `]}`, "mcp_servers[1].tool_rules.lookup", "invalid_policy",
		`the tool rule for "lookup" must be allow, ask or deny; found "maybe"`},
	{"tool rule empty name", `{"mcp_servers": [` + mcpRules(`{"": "deny"}`) + `]}`, `mcp_servers[0].tool_rules[""]`, "tool_name_required", ""},
	{"tool rule dotted name", `{"mcp_servers": [` + mcpRules(`{"a.b": 1}`) + `]}`, `mcp_servers[0].tool_rules["a.b"]`, "invalid_type",
		`the tool rule for "a.b" must be allow, ask or deny as a string, or an object with a policy and argument rules; found a number`},
	{"dotted unknown field", `{"skills": [{"name": "a", "skill": "refund-policy", "x.y": {}}]}`, `skills[0]["x.y"]`, "unknown_field", ""},
	{"tool rule name too long", `{"mcp_servers": [` + mcpRules(`{"`+strings.Repeat("t", 129)+`": "deny"}`) + `]}`, "mcp_servers[0].tool_rules." + strings.Repeat("t", 129), "tool_name_too_long", ""},
	{"sandbox rule not exec", sandboxWith(env2026 + `, ` + netNone + `, "tool_rules": {"shell": "ask"}`), "sandboxes[0].tool_rules.shell", "unknown_tool",
		`a sandbox has one tool, exec; found "shell"`},
	{"function rule not in manifest", fnWith(`"tool_rules": {"get_issue": "ask", "delete_repo": "deny"}`), "functions[0].tool_rules.delete_repo", "unknown_tool",
		`function package "github" "1.0.0" has no tool "delete_repo"; its tools are get_issue and list_pulls`},
	{"function not installed", `{"functions": [{"name": "gh", "package": "github", "version": "9.9.9", "default_policy": "allow"}]}`, "functions[0].package", "unknown_function",
		`no function package "github" version "9.9.9" is installed`},
	{"function version missing", `{"functions": [{"name": "gh", "package": "github", "default_policy": "allow"}]}`, "functions[0].version", "version_required", ""},
	{"release unknown", sandboxWith(`"environment": {"type": "platform", "release": "2030"}, ` + netNone), "sandboxes[0].environment.release", "unknown_release",
		`release "2030" is not offered; choose one of 2026 or 2025`},
	{"release missing", sandboxWith(`"environment": {"type": "platform"}, ` + netNone), "sandboxes[0].environment.release", "unknown_release",
		"release is required; choose one of 2026 or 2025"},
	{"environment type", sandboxWith(`"environment": {"type": "docker", "release": "2026"}, ` + netNone), "sandboxes[0].environment.type", "invalid_environment",
		`environment type must be platform; found "docker"`},
	{"environment missing", sandboxWith(netNone), "sandboxes[0].environment", "environment_required", ""},
	{"network type", sandboxWith(env2026 + `, "network": {"type": "host"}`), "sandboxes[0].network.type", "invalid_network",
		`network type must be none (No internet), internet (Internet; also written unrestricted) or allowlist (only the hosts listed in allow); found "host"`},
	{"network missing", sandboxWith(env2026), "sandboxes[0].network", "network_required", ""},
	{"network a string", sandboxWith(env2026 + `, "network": "none"`), "sandboxes[0].network", "invalid_type", "network must be an object; found a string"},
}

func TestParseRejects(t *testing.T) {
	for _, tt := range rejectCases {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.config)
			if len(got) != 1 {
				t.Fatalf("got %d problems %v, want one %s at %q", len(got), got, tt.code, tt.field)
			}
			g := got[0]
			if g.Field != tt.field || g.Code != tt.code || g.Title == "" {
				t.Errorf("got %+v, want field %q code %s and a title", g, tt.field, tt.code)
			}
			if tt.detail != "" && g.Detail != tt.detail {
				t.Errorf("detail = %q, want %q", g.Detail, tt.detail)
			}
			// Whatever the problem, its message never repeats a secret.
			if strings.Contains(g.Detail, "s3cret") {
				t.Errorf("detail %q repeats the secret", g.Detail)
			}
		})
	}
}

func mcpRules(rules string) string {
	return `{"name": "more", "url": "https://mcp.example.com/more", "default_policy": "ask", "tool_rules": ` + rules + `}`
}

func TestParseAccepts(t *testing.T) {
	tests := []struct{ name, config string }{
		{"empty config", `{}`},
		{"kinds given as null", `{"skills": null, "builtins": null}`},
		{"same name in two kinds", `{"mcp_servers": [` + strings.Replace(okMCP, "orders", "gh", 1) + `], "functions": [` + okFn + `]}`},
		{"harmless query parameter", mcpWith(`"url": "https://mcp.example.com/orders?region=eu&page=2"`)},
		{"origin with port", fnWith(`"origins": ["http://127.0.0.1:8080"]`)},
		{"MCP rule for a tool not yet discovered", `{"mcp_servers": [` + mcpRules(`{"lookup": "allow", "refund": "deny"}`) + `]}`},
		{"null tool rules", mcpWith(`"url": "https://mcp.example.com", "tool_rules": null`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := problems(t, tt.config); got != nil {
				t.Errorf("Parse refused a good config: %v", got)
			}
		})
	}
}

// A config with many problems gets all of them, in the order a person reads
// the document, whatever order the checks run in.
func TestParseReportsAllInDocumentOrder(t *testing.T) {
	config := `{
  "mcp_servers": [
    {"name": "Orders", "url": "ftp://x", "headers": {}, "default_policy": "sometimes"}
  ],
  "skills": [{"name": "parent", "skill": "nope", "default_policy": "allow"}],
  "sandboxes": [
    {"name": "box", "tool_rules": {"shell": "allow"}, "environment": {"type": "platform", "release": "1999"}}
  ],
  "functions": [
    {"name": "gh", "tool_rules": {"x": "allow"}, "package": "github", "version": "0.0.1", "origins": ["https://a/b"], "default_policy": "ask"}
  ],
  "builtins": [{"name": "ask_user"}, {"name": "ask_user"}],
  "clients": []
}`
	want := []string{
		"mcp_servers[0].name name_invalid",
		"mcp_servers[0].url invalid_url",
		"mcp_servers[0].headers credential_in_config",
		"mcp_servers[0].default_policy invalid_policy",
		"skills[0].name name_reserved",
		"skills[0].skill unknown_skill",
		"skills[0].default_policy policy_not_allowed",
		"sandboxes[0].tool_rules.shell unknown_tool",
		"sandboxes[0].environment.release unknown_release",
		"sandboxes[0].network network_required",
		"sandboxes[0].default_policy policy_required",
		"functions[0].package unknown_function",
		"functions[0].origins[0] invalid_origin",
		"builtins[1].name name_duplicate",
		"clients unknown_field",
	}
	got := problems(t, config)
	var lines []string
	for _, g := range got {
		lines = append(lines, g.Field+" "+g.Code)
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseLimit(t *testing.T) {
	big := `{"skills": [` + strings.Repeat(" ", MaxConfigBytes) + `]}`
	got := problems(t, big)
	want := fmt.Sprintf("config must be at most 1048576 bytes (1 MiB); it has %d", len(big))
	if len(got) != 1 || got[0].Code != "config_too_large" || got[0].Detail != want {
		t.Errorf("got %v, want config_too_large %q", got, want)
	}
}

// Text that cannot be stored (NUL, invalid UTF-8, a lone surrogate) is
// refused with its path, never mended into U+FFFD; a U+FFFD that was sent
// is kept.
func TestParseRefusesBrokenText(t *testing.T) {
	for _, c := range []struct{ name, doc, field string }{
		{"NUL in a tool rule", `{"mcp_servers":[{"name":"a","url":"https://x.example","default_policy":"ask","tool_rules":{"t\u0000":"allow"}}]}`, `mcp_servers[0].tool_rules["t\x00"]`},
		{"invalid UTF-8 in a URL", "{\"mcp_servers\":[{\"name\":\"a\",\"url\":\"https://x.example/\xff\",\"default_policy\":\"ask\"}]}", "mcp_servers[0].url"},
		{"lone surrogate", `{"mcp_servers":[{"name":"a","url":"https://x.example/\ud800","default_policy":"ask"}]}`, "mcp_servers[0].url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), cat)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("accepted: %v", err)
			}
			for _, fe := range ve.Errors {
				if fe.Code == "invalid_text" && fe.Field == c.field {
					return
				}
			}
			t.Fatalf("no invalid_text at %s: %+v", c.field, ve.Errors)
		})
	}
	if _, err := Parse([]byte(`{"mcp_servers":[{"name":"a","url":"https://x.example/\ufffd","default_policy":"ask"}]}`), cat); err != nil {
		t.Fatalf("a U+FFFD that was sent is refused: %v", err)
	}
}

// A config nested past MaxDepth is refused where it goes too deep, without
// reading on: a megabyte of "[" must not recurse a million frames.
func TestParseRefusesDeepNesting(t *testing.T) {
	fes := problems(t, `{"mcp_servers":`+strings.Repeat("[", 1<<19))
	if len(fes) != 1 || fes[0].Code != "invalid_json" || !strings.Contains(fes[0].Detail, "deeper than 32 levels") {
		t.Fatalf("deep nesting: %+v", fes)
	}
	if fes := problems(t, `{"mcp_servers":[{"name":"a","url":"https://x.example","default_policy":"ask","tool_rules":{"t":"allow"}}]}`); fes != nil {
		t.Fatalf("a real config: %+v", fes)
	}
}
