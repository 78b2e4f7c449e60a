package tools

import (
	"fmt"
	"strings"
	"testing"
)

// lines renders changes as the diff page would list them.
func lines(changes []Change) string {
	var out []string
	for _, c := range changes {
		out = append(out, fmt.Sprintf("%s %s %s", c.Op, c.Kind, c.Name))
		for _, f := range c.Fields {
			out = append(out, fmt.Sprintf("  %s: %q -> %q", f.Field, f.Before, f.After))
		}
	}
	return strings.Join(out, "\n")
}

func sandbox(name, release, network, policy string, rules map[string]string) Sandbox {
	return Sandbox{Name: name, Environment: Environment{"platform", release}, Network: Network{Type: network},
		DefaultPolicy: policy, ToolRules: plainRules(rules)}
}

var wb = sandbox("workbench", "2026", "unrestricted", "allow", nil)

// diffCases are pairs of versions and the diff a person should read.
var diffCases = []struct {
	name string
	a, b Config
	want string
}{
	{"same config", everyKind, everyKind, ""},
	{"both empty", Config{}, Config{}, ""},
	{"added", Config{}, Config{Sandboxes: []Sandbox{wb}}, `added sandbox workbench
  release: "" -> "2026"
  network: "" -> "unrestricted"
  default_policy: "" -> "allow"`},
	{"removed", Config{Skills: []Skill{{"a", "refund-policy"}}}, Config{}, `removed skill a
  skill: "refund-policy" -> ""`},
	{"release, network and a new rule", Config{Sandboxes: []Sandbox{wb}},
		Config{Sandboxes: []Sandbox{sandbox("workbench", "2027", "none", "allow", map[string]string{"exec": "ask"})}},
		`changed sandbox workbench
  release: "2026" -> "2027"
  network: "unrestricted" -> "none"
  tool_rules.exec: "" -> "ask"`},
	{"rules changed and removed, in tool order", Config{MCPServers: []MCPServer{{Name: "o", URL: "https://a", DefaultPolicy: "ask",
		ToolRules: plainRules(map[string]string{"zap": "deny", "lookup": "allow"})}}},
		Config{MCPServers: []MCPServer{{Name: "o", URL: "https://b", DefaultPolicy: "ask",
			ToolRules: plainRules(map[string]string{"lookup": "deny", "add": "allow"})}}},
		`changed mcp o
  url: "https://a" -> "https://b"
  tool_rules.add: "" -> "allow"
  tool_rules.lookup: "allow" -> "deny"
  tool_rules.zap: "deny" -> ""`},
	{"function version and origins", Config{Functions: []Function{{Name: "gh", Package: "github", Version: "1.0.0", DefaultPolicy: "allow"}}},
		Config{Functions: []Function{{Name: "gh", Package: "github", Version: "1.1.0", DefaultPolicy: "allow",
			Origins: []string{"https://api.github.com", "https://uploads.github.com"}}}},
		`changed fn gh
  version: "1.0.0" -> "1.1.0"
  origins: "" -> "https://api.github.com, https://uploads.github.com"`},
	{"renamed is removed and added", Config{Builtins: []Builtin{{"ask_user"}}}, Config{Builtins: []Builtin{{"session"}}},
		"removed builtin ask_user\nadded builtin session"},
	{"same name, other kind", Config{Skills: []Skill{{"gh", "refund-policy"}}},
		Config{Functions: []Function{{Name: "gh", Package: "github", Version: "1.0.0", DefaultPolicy: "ask"}}},
		`removed skill gh
  skill: "refund-policy" -> ""
added fn gh
  package: "" -> "github"
  version: "" -> "1.0.0"
  default_policy: "" -> "ask"`},
	{"order: kinds in config order, a's grants then b's new ones",
		Config{Sandboxes: []Sandbox{wb, sandbox("b", "2026", "none", "ask", nil)}, Builtins: []Builtin{{"session"}}},
		Config{Builtins: []Builtin{{"ask_user"}, {"session"}}, Sandboxes: []Sandbox{sandbox("c", "2026", "none", "ask", nil), wb}},
		`removed sandbox b
  release: "2026" -> ""
  network: "none" -> ""
  default_policy: "ask" -> ""
added sandbox c
  release: "" -> "2026"
  network: "" -> "none"
  default_policy: "" -> "ask"
added builtin ask_user`},
}

func TestDiff(t *testing.T) {
	for _, tt := range diffCases {
		t.Run(tt.name, func(t *testing.T) {
			if got := lines(Diff(tt.a, tt.b)); got != tt.want {
				t.Errorf("Diff:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
