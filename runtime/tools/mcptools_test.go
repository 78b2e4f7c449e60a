package tools

import "testing"

func TestCloseName(t *testing.T) {
	defs := []ToolDef{{Name: "get-env"}, {Name: "echo"}, {Name: "get-sum"}, {Name: "longRunningOperation"}}
	tests := []struct{ name, want string }{
		{"get_env", "get-env"},    // _ for -
		{"GET-ENV", "get-env"},    // case
		{"ecoh", "echo"},          // two edits
		{"get-su", "get-sum"},     // one edit
		{"delete-everything", ""}, // nothing close
		{"longrunningoperation", "longRunningOperation"},
	}
	for _, tc := range tests {
		if got := CloseName(tc.name, defs); got != tc.want {
			t.Errorf("CloseName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMCPRulesCheckedAgainstFetchedTools(t *testing.T) {
	fc := fetchedCatalog{cat, map[string][]ToolDef{"https://mcp.example.com/mcp": {{Name: "get-env"}, {Name: "echo"}}}}
	tests := []struct {
		name, config, wantCode, wantField string
	}{
		{"typo", `{"mcp_servers":[{"name":"s","url":"https://mcp.example.com/mcp","default_policy":"allow","tool_rules":{"get_env":"deny"}}]}`,
			"unknown_tool", "mcp_servers[0].tool_rules.get_env"},
		{"right name", `{"mcp_servers":[{"name":"s","url":"https://mcp.example.com/mcp","default_policy":"allow","tool_rules":{"get-env":"deny"}}]}`, "", ""},
		{"not fetched: any name", `{"mcp_servers":[{"name":"s","url":"https://other.example.com/mcp","default_policy":"allow","tool_rules":{"get_env":"deny"}}]}`, "", ""},
		{"new_tools", `{"mcp_servers":[{"name":"s","url":"https://mcp.example.com/mcp","default_policy":"allow","new_tools":"maybe"}]}`,
			"invalid_new_tools", "mcp_servers[0].new_tools"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.config), fc)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ve, ok := err.(*ValidationError)
			if !ok || ve.Errors[0].Code != tc.wantCode || ve.Errors[0].Field != tc.wantField {
				t.Fatalf("got %v", err)
			}
		})
	}
}

type fetchedCatalog struct {
	testCatalog
	fetched map[string][]ToolDef
}

func (c fetchedCatalog) MCPTools(url string) ([]ToolDef, bool) {
	d, ok := c.fetched[url]
	return d, ok
}
