package tools

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// everyKind is a config with a grant of every kind and every optional setting.
var everyKind = Config{
	MCPServers: []MCPServer{
		{Name: "orders", URL: "https://mcp.example.com/orders?region=eu&v=2", DefaultPolicy: "ask",
			ToolRules: plainRules(map[string]string{"lookup": "allow", "refund": "deny"})},
		{Name: "crm", URL: "http://127.0.0.1:9000/mcp", DefaultPolicy: "deny"},
	},
	Skills: []Skill{{Name: "refund-policy", Skill: "refund-policy"}, {Name: "style", Skill: "style-guide"}},
	Sandboxes: []Sandbox{
		{Name: "workbench", Environment: Environment{Type: "platform", Release: "2026"},
			Network: Network{Type: "unrestricted"}, DefaultPolicy: "allow", ToolRules: plainRules(map[string]string{"exec": "ask"})},
		{Name: "offline", Environment: Environment{Type: "platform", Release: "2025"},
			Network: Network{Type: "none"}, DefaultPolicy: "ask"},
	},
	Functions: []Function{
		{Name: "gh", Package: "github", Version: "1.0.0",
			Origins:       []string{"https://api.github.com", "https://uploads.github.com:443"},
			DefaultPolicy: "allow", ToolRules: plainRules(map[string]string{"list_pulls": "deny"})},
		{Name: "docs", Package: "anydoc", Version: "2.1.0", DefaultPolicy: "ask"},
	},
	Builtins: []Builtin{{Name: "ask_user"}, {Name: "session"}},
}

func TestExportRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"every kind", everyKind},
		{"empty", Config{}},
		{"built-ins only", Config{Builtins: []Builtin{{Name: "session"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := Export(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(data, cat)
			if err != nil {
				t.Fatalf("Parse(Export(c)) refused its own export: %v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, tt.cfg) {
				t.Errorf("Parse(Export(c)) = %+v\nwant %+v", got, tt.cfg)
			}
		})
	}
}

func TestExportFileRoundTrip(t *testing.T) {
	tests := []struct{ name, file string }{
		{"sandbox seed", "testdata/seed_sandbox.json"},
		{"API.md example", "testdata/api_example.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse(in, cat)
			if err != nil {
				t.Fatalf("Parse refused %s: %v", tt.file, err)
			}
			out, err := Export(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// API.md's example writes "tool_rules": {}, which Export leaves out.
			want := strings.ReplaceAll(string(in), `, "tool_rules": {}`, "")
			if !reflect.DeepEqual(decode(t, out), decode(t, []byte(want))) {
				t.Errorf("export differs from the file:\n%s", out)
			}
			if got, want := keyOrder(t, out), keyOrder(t, []byte(want)); !reflect.DeepEqual(got, want) {
				t.Errorf("key order %v\nwant %v", got, want)
			}
		})
	}
}

func TestExportLeavesOutEmpty(t *testing.T) {
	data, err := Export(Config{Sandboxes: []Sandbox{{Name: "b", Environment: Environment{"platform", "2026"},
		Network: Network{Type: "none"}, DefaultPolicy: "deny", ToolRules: plainRules(map[string]string{})}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"mcp_servers", "skills", "functions", "builtins", "tool_rules"} {
		if strings.Contains(string(data), absent) {
			t.Errorf("export holds %q:\n%s", absent, data)
		}
	}
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	return v
}

// keyOrder lists every object key with its path, in document order.
func keyOrder(t *testing.T, data []byte) []string {
	t.Helper()
	root, err := parseTree(data)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(path string, n *node)
	walk = func(path string, n *node) {
		for _, m := range n.fields {
			keys = append(keys, joinPath(path, m.key))
			walk(joinPath(path, m.key), m.val)
		}
		for i, item := range n.items {
			walk(indexPath(path, i), item)
		}
	}
	walk("", root)
	return keys
}
