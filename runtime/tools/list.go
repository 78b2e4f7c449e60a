package tools

import "encoding/json"

// Tool is one tool a version grants, as the version's tool list shows it.
type Tool struct {
	Name         string          `json:"name"` // full name, <kind>__<grant>__<tool>; "" for a placeholder
	Kind         string          `json:"kind"`
	Grant        string          `json:"grant"`
	Tool         string          `json:"tool"` // name inside the grant; "" for a placeholder
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	Policy       string          `json:"policy"`        // allow, ask, deny; "" for kinds without policy
	PolicySource string          `json:"policy_source"` // default, rule; "" for kinds without policy
	Offered      bool            `json:"offered"`       // false when denied, or not discovered yet
	Discovered   bool            `json:"discovered"`    // false only for a placeholder
	// An MCP server's tool: what its tools/list said besides the above (ToolDef).
	Title        string          `json:"title,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Meta         json.RawMessage `json:"meta,omitempty"`
	// Rules are the tool's argument rules (Decide applies them per call);
	// Policy is then what governs the calls none of them matches.
	Rules []ArgRule `json:"rules,omitempty"`
}

// List is every tool the version grants, in config order (MCP servers,
// skills, sandboxes, functions, built-ins), each with its effective policy.
// discovered holds each MCP grant's tools by grant name; a grant missing from
// it, or a function package missing from cat, gets one placeholder entry
// (Tool "", Discovered false, Offered false) so the console can say "not
// discovered yet" instead of showing nothing. Denied tools are listed with
// Offered false: the model never sees them.
func List(cfg Config, discovered map[string][]ToolDef, cat Catalog) []Tool {
	var out []Tool
	for _, g := range cfg.MCPServers {
		defs, ok := discovered[g.Name]
		out = appendGrant(out, KindMCP, g.Name, g.DefaultPolicy, g.ToolRules, defs, ok)
	}
	for _, g := range cfg.Skills {
		out = appendGrant(out, KindSkill, g.Name, "", nil, SkillTools(g), true)
	}
	for _, g := range cfg.Sandboxes {
		out = appendGrant(out, KindSandbox, g.Name, g.DefaultPolicy, g.ToolRules, SandboxTools(g), true)
	}
	for _, g := range cfg.Functions {
		defs, ok := cat.FunctionTools(g.Package, g.Version)
		out = appendGrant(out, KindFn, g.Name, g.DefaultPolicy, g.ToolRules, defs, ok)
	}
	for _, g := range cfg.Builtins {
		out = appendGrant(out, KindBuiltin, g.Name, "", nil, BuiltinTools(g.Name), true)
	}
	return out
}

// appendGrant adds one grant's tools; known is false when its tools cannot
// be listed yet, which gives the placeholder.
func appendGrant(out []Tool, kind, grant, def string, rules map[string]ToolRule, defs []ToolDef, known bool) []Tool {
	if !known {
		policy, source := Effective(def, nil, "")
		return append(out, Tool{Kind: kind, Grant: grant, Policy: policy, PolicySource: source})
	}
	for _, d := range defs {
		policy, source := Effective(def, rules, d.Name)
		args := rules[d.Name].Rules
		out = append(out, Tool{
			Name: FullName(kind, grant, d.Name), Kind: kind, Grant: grant, Tool: d.Name,
			Description: d.Description, InputSchema: d.InputSchema,
			Policy: policy, PolicySource: source,
			Offered: anyOffered(policy, args), Discovered: true, Rules: args,
			Title: d.Title, Annotations: d.Annotations, OutputSchema: d.OutputSchema, Meta: d.Meta,
		})
	}
	return out
}
