package tools

import (
	"cmp"
	"slices"
	"strings"
)

// Change is one grant added, removed or changed between two versions.
type Change struct {
	Kind   string        `json:"kind"`
	Name   string        `json:"name"`
	Op     string        `json:"op"` // added, removed, changed
	Fields []FieldChange `json:"fields,omitempty"`
}

// FieldChange is one setting of a grant before and after; "" means unset.
// An added grant lists every setting with Before "", a removed one with After "".
type FieldChange struct {
	Field  string `json:"field"` // url, release, network, default_policy, tool_rules.<tool>, origins, package, version, skill
	Before string `json:"before"`
	After  string `json:"after"`
}

// Ops of a Change.
const (
	OpAdded   = "added"
	OpRemoved = "removed"
	OpChanged = "changed"
)

// Diff lists what changed from version a to version b, grant by grant,
// matched by kind and name (a renamed grant is one removed and one added).
// Order is stable: kinds in config order; within a kind, a's grants in a's
// order (removed or changed), then b's new grants in b's order.
func Diff(a, b Config) []Change {
	var out []Change
	out = append(out, diffKind(KindMCP, views(a.MCPServers, mcpSettings), views(b.MCPServers, mcpSettings))...)
	out = append(out, diffKind(KindSkill, views(a.Skills, skillSettings), views(b.Skills, skillSettings))...)
	out = append(out, diffKind(KindSandbox, views(a.Sandboxes, sandboxSettings), views(b.Sandboxes, sandboxSettings))...)
	out = append(out, diffKind(KindFn, views(a.Functions, fnSettings), views(b.Functions, fnSettings))...)
	out = append(out, diffKind(KindBuiltin, views(a.Builtins, builtinSettings), views(b.Builtins, builtinSettings))...)
	if a.ToolsAs != b.ToolsAs {
		out = append(out, Change{Kind: KindSetting, Name: "tools_as", Op: OpChanged,
			Fields: []FieldChange{{Field: "tools_as", Before: toolsAsText(a.ToolsAs), After: toolsAsText(b.ToolsAs)}}})
	}
	return out
}

// KindSetting is the Kind of a Change to a version setting rather than a grant.
const KindSetting = "setting"

// toolsAsText says the default, flat, rather than leave it blank.
func toolsAsText(s string) string {
	if s == "" {
		return ToolsFlat
	}
	return s
}

// A grantView is a grant reduced to its name and its settings as text, so
// every kind is compared by the same code.
type grantView struct {
	name     string
	settings []setting
}

type setting struct{ field, value string }

func views[G any](gs []G, settings func(G) (string, []setting)) []grantView {
	out := make([]grantView, len(gs))
	for i, g := range gs {
		out[i].name, out[i].settings = settings(g)
	}
	return out
}

func mcpSettings(g MCPServer) (string, []setting) {
	s := []setting{{"url", g.URL}, {"default_policy", g.DefaultPolicy}, {"new_tools", g.NewTools}}
	return g.Name, append(s, ruleSettings(g.ToolRules)...)
}

func skillSettings(g Skill) (string, []setting) { return g.Name, []setting{{"skill", g.Skill}} }

func sandboxSettings(g Sandbox) (string, []setting) {
	s := []setting{{"release", g.Environment.Release}, {"network", networkText(g.Network)}, {"default_policy", g.DefaultPolicy}}
	s = append(s, resourceSettings(g)...)
	return g.Name, append(s, ruleSettings(g.ToolRules)...)
}

func fnSettings(g Function) (string, []setting) {
	s := []setting{{"package", g.Package}, {"version", g.Version},
		{"origins", strings.Join(g.Origins, ", ")}, {"default_policy", g.DefaultPolicy}}
	return g.Name, append(s, ruleSettings(g.ToolRules)...)
}

func builtinSettings(g Builtin) (string, []setting) { return g.Name, nil }

// ruleSettings lists tool rules by tool name, so a diff does not depend on
// map order.
func ruleSettings(rules map[string]ToolRule) []setting {
	out := make([]setting, 0, len(rules))
	for tool, r := range rules {
		out = append(out, setting{joinPath("tool_rules", tool), r.Text()})
	}
	slices.SortFunc(out, func(x, y setting) int { return cmp.Compare(x.field, y.field) })
	return out
}

func diffKind(kind string, a, b []grantView) []Change {
	var out []Change
	for _, ga := range a {
		i := slices.IndexFunc(b, func(g grantView) bool { return g.name == ga.name })
		if i < 0 {
			out = append(out, Change{Kind: kind, Name: ga.name, Op: OpRemoved, Fields: compare(ga.settings, nil)})
		} else if fields := compare(ga.settings, b[i].settings); fields != nil {
			out = append(out, Change{Kind: kind, Name: ga.name, Op: OpChanged, Fields: fields})
		}
	}
	for _, gb := range b {
		if !slices.ContainsFunc(a, func(g grantView) bool { return g.name == gb.name }) {
			out = append(out, Change{Kind: kind, Name: gb.name, Op: OpAdded, Fields: compare(nil, gb.settings)})
		}
	}
	return out
}

// compare lists the settings whose values differ: fixed settings in their
// order, then tool rules by tool name. Empty values are unset, not changes.
func compare(before, after []setting) []FieldChange {
	var fields []string
	for _, s := range slices.Concat(before, after) {
		if !slices.Contains(fields, s.field) {
			fields = append(fields, s.field)
		}
	}
	slices.SortStableFunc(fields, func(x, y string) int {
		rx, ry := isRule(x), isRule(y)
		switch {
		case rx && ry:
			return cmp.Compare(x, y)
		case rx:
			return 1
		case ry:
			return -1
		}
		return 0 // fixed settings keep their order
	})
	var out []FieldChange
	for _, f := range fields {
		b, a := valueOf(before, f), valueOf(after, f)
		if a != b {
			out = append(out, FieldChange{Field: f, Before: b, After: a})
		}
	}
	return out
}

func isRule(field string) bool { return strings.HasPrefix(field, "tool_rules") }

func valueOf(settings []setting, field string) string {
	for _, s := range settings {
		if s.field == field {
			return s.value
		}
	}
	return ""
}
