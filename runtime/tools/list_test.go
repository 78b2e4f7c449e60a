package tools

import (
	"fmt"
	"strings"
	"testing"
)

func TestEffective(t *testing.T) {
	rules := map[string]string{"exec": "ask", "refund": "deny"}
	tests := []struct {
		name, def, tool, policy, source string
	}{
		{"rule overrides default", "allow", "exec", "ask", "rule"},
		{"deny rule under allow", "allow", "refund", "deny", "rule"},
		{"no rule: default", "deny", "lookup", "deny", "default"},
		{"rule names exactly one tool", "allow", "Exec", "allow", "default"},
		{"kind without policy", "", "read", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s := Effective(tt.def, plainRules(rules), tt.tool)
			if p != tt.policy || s != tt.source {
				t.Errorf("Effective(%q, %q) = %q, %q; want %q, %q", tt.def, tt.tool, p, s, tt.policy, tt.source)
			}
		})
	}
}

// row is what the console's tool table shows per tool.
func row(tl Tool) string {
	return fmt.Sprintf("%s %s/%s policy=%s(%s) offered=%v discovered=%v",
		tl.Name, tl.Kind, tl.Grant, tl.Policy, tl.PolicySource, tl.Offered, tl.Discovered)
}

func TestList(t *testing.T) {
	discovered := map[string][]ToolDef{"orders": {
		{Name: "lookup", Description: "Find an order."},
		{Name: "refund", Description: "Refund an order."},
		{Name: "cancel", Description: "Cancel an order."},
	}}
	want := []string{
		"mcp__orders__lookup mcp/orders policy=allow(rule) offered=true discovered=true",
		"mcp__orders__refund mcp/orders policy=deny(rule) offered=false discovered=true",
		"mcp__orders__cancel mcp/orders policy=ask(default) offered=true discovered=true",
		" mcp/crm policy=deny(default) offered=false discovered=false",
		"skill__refund-policy__read skill/refund-policy policy=() offered=true discovered=true",
		"skill__style__read skill/style policy=() offered=true discovered=true",
		"sandbox__workbench__exec sandbox/workbench policy=ask(rule) offered=true discovered=true",
		"sandbox__offline__exec sandbox/offline policy=ask(default) offered=true discovered=true",
		"fn__gh__get_issue fn/gh policy=allow(default) offered=true discovered=true",
		"fn__gh__list_pulls fn/gh policy=deny(rule) offered=false discovered=true",
		"fn__docs__convert_to_markdown fn/docs policy=ask(default) offered=true discovered=true",
		"builtin__ask_user__ask builtin/ask_user policy=() offered=true discovered=true",
		"builtin__session__rename builtin/session policy=() offered=true discovered=true",
	}
	got := List(everyKind, discovered, cat)
	var rows []string
	for _, tl := range got {
		rows = append(rows, row(tl))
		if tl.Discovered && (tl.Description == "" || len(tl.InputSchema) == 0 && tl.Kind != KindMCP) {
			t.Errorf("%s lacks a description or a schema", tl.Name)
		}
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("List:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

func TestListPlaceholders(t *testing.T) {
	cfg := Config{
		MCPServers: []MCPServer{{Name: "orders", URL: "https://x.example.com", DefaultPolicy: "ask"}},
		Functions:  []Function{{Name: "old", Package: "gone", Version: "0.1.0", DefaultPolicy: "allow"}},
	}
	got := List(cfg, nil, cat)
	if len(got) != 2 {
		t.Fatalf("List = %v, want one placeholder per grant", got)
	}
	for _, tl := range got {
		if tl.Name != "" || tl.Tool != "" || tl.Discovered || tl.Offered || tl.Grant == "" {
			t.Errorf("placeholder %+v: want a grant, no tool, not discovered, not offered", tl)
		}
	}
}

func TestSandboxDescriptionSaysNetwork(t *testing.T) {
	tests := []struct{ network, want string }{
		{NetworkNone, "It has no Internet access."},
		{NetworkUnrestricted, "It has Internet access."},
	}
	for _, tt := range tests {
		t.Run(tt.network, func(t *testing.T) {
			d := SandboxTools(Sandbox{Name: "b", Network: Network{Type: tt.network}})[0].Description
			if !strings.HasSuffix(d, tt.want) {
				t.Errorf("description %q does not end with %q", d, tt.want)
			}
		})
	}
}
