package runtime

import (
	"strings"
	"testing"
)

func TestCodeToolsNamesAndSearch(t *testing.T) {
	ts := codeTools([]OfferedTool{
		{Name: "mcp__everything__echo", Description: "Echoes back the input", Policy: "allow"},
		{Name: "mcp__everything__get-env", Description: "Returns the environment", Policy: "ask"},
		{Name: "sandbox__workbench__exec", Description: "Run one shell command", Policy: "allow"},
		{Name: "not a tool name"},
	})
	if len(ts) != 3 {
		t.Fatalf("codeTools kept %d tools; want the 3 with full names", len(ts))
	}
	for _, tc := range []struct{ name, dotted, expr string }{
		{"mcp__everything__echo", "mcp.everything.echo", "$.mcp.everything.echo"},
		{"mcp__everything__get-env", "mcp.everything.get-env", `$.mcp.everything["get-env"]`},
		{"sandbox__workbench__exec", "sandbox.workbench.exec", "$.sandbox.workbench.exec"},
	} {
		for _, by := range []string{tc.name, tc.dotted, "$." + tc.dotted, tc.expr} {
			got, ok := FindCodeTool(ts, by)
			if !ok || got.Name != tc.name || got.Dotted() != tc.dotted || got.Expr() != tc.expr {
				t.Errorf("FindCodeTool(%q) = %+v, %v", by, got, ok)
			}
		}
	}
	if _, ok := FindCodeTool(ts, "mcp.everything.get-sum"); ok {
		t.Error("found a tool that is not offered")
	}
	for query, want := range map[string]string{"": "3", "ECHO": "mcp__everything__echo", "sandbox command": "sandbox__workbench__exec", "ask": "mcp__everything__get-env", "nothing here": "0"} {
		got := SearchCodeTools(ts, query)
		var names []string
		for _, g := range got {
			names = append(names, g.Name)
		}
		switch want {
		case "3", "0":
			if want == "3" && len(got) != 3 || want == "0" && len(got) != 0 {
				t.Errorf("search %q found %v", query, names)
			}
		default:
			if len(got) != 1 || got[0].Name != want {
				t.Errorf("search %q found %v; want %s", query, names, want)
			}
		}
	}
	dts := CodeTypes(ts)
	if !strings.Contains(dts, `"get-env"(`) || !strings.Contains(dts, "Ask first") || strings.Contains(dts, "SubakoError") {
		t.Errorf("CodeTypes:\n%s", dts)
	}
}
