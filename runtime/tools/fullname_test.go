package tools

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFullName(t *testing.T) {
	tests := []struct {
		in, kind, grant, tool string
		errPart               string // "" means the name is good
	}{
		{"mcp__orders__lookup", "mcp", "orders", "lookup", ""},
		{"builtin__ask_user__ask", "builtin", "ask_user", "ask", ""},
		{"builtin__session__rename", "builtin", "session", "rename", ""},
		{"client__web__highlight_row", "client", "web", "highlight_row", ""},
		{"fn__anydoc__convert_to_markdown", "fn", "anydoc", "convert_to_markdown", ""},
		{"skill__refund-policy__read", "skill", "refund-policy", "read", ""},
		{"mcp__a-1__x__y", "mcp", "a-1", "x__y", ""},
		{"mcp__a____y", "mcp", "a", "__y", ""},
		{"", "", "", "", "it has no __"},
		{"lookup", "", "", "", "it has no __"},
		{"mcp__orders", "", "", "", "it has no tool part"},
		{"mcp__orders__", "", "", "", "its tool part is empty"},
		{"MCP__orders__lookup", "", "", "", `unknown kind "MCP"`},
		{"shell__b__exec", "", "", "", `unknown kind "shell"`},
		{"mcp____lookup", "", "", "", "grant name must be 1 to 32 characters"},
		{"sandbox__" + strings.Repeat("b", 33) + "__exec", "", "", "", "grant name must be 1 to 32 characters"},
		{"sandbox__Build__exec", "", "", "", `found "B" at position 1`},
		{"sandbox__a_b__exec", "", "", "", `found "_" at position 2`},
		{"builtin__shell__exec", "", "", "", `unknown built-in "shell"`},
		{"builtin__ask__user__ask", "", "", "", `unknown built-in "ask"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			kind, grant, tool, err := ParseFullName(tt.in)
			if tt.errPart != "" {
				if err == nil || !errors.Is(err, ErrToolName) || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("ParseFullName(%q) error = %v, want ErrToolName saying %q", tt.in, err, tt.errPart)
				}
				return
			}
			if err != nil || kind != tt.kind || grant != tt.grant || tool != tt.tool {
				t.Fatalf("ParseFullName(%q) = %q, %q, %q, %v", tt.in, kind, grant, tool, err)
			}
			if back := FullName(kind, grant, tool); back != tt.in {
				t.Errorf("FullName gives %q, want %q", back, tt.in)
			}
		})
	}
}

// Every tool List offers must parse back to its own kind, grant and tool.
func TestListNamesParse(t *testing.T) {
	discovered := map[string][]ToolDef{"orders": {{Name: "lookup"}}, "crm": {{Name: "find__all"}}}
	for _, tl := range List(everyKind, discovered, cat) {
		kind, grant, tool, err := ParseFullName(tl.Name)
		if err != nil || kind != tl.Kind || grant != tl.Grant || tool != tl.Tool {
			t.Errorf("ParseFullName(%q) = %q, %q, %q, %v", tl.Name, kind, grant, tool, err)
		}
	}
}
