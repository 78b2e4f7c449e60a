package tools

import (
	"fmt"
	"slices"
)

// kindFields are the config's top-level fields, in API.md's order.
var kindFields = []string{"mcp_servers", "skills", "sandboxes", "functions", "builtins", "tools_as"}

func (v *validator) config(root *node) Config {
	top, ok := v.object("", root, "a config", kindFields...)
	if !ok {
		return Config{}
	}
	// Each kind is read whatever the others hold, so one bad kind does not
	// hide the problems of the rest.
	return Config{
		MCPServers: readKind(v, top, "mcp_servers", (*validator).mcpServer),
		Skills:     readKind(v, top, "skills", (*validator).skill),
		Sandboxes:  readKind(v, top, "sandboxes", (*validator).sandbox),
		Functions:  readKind(v, top, "functions", (*validator).function),
		Builtins:   readKind(v, top, "builtins", (*validator).builtin),
		ToolsAs:    v.toolsAs(top),
	}
}

// readKind reads one kind's list of grants; names collects the kind's grant
// names so a duplicate is caught within the kind only.
func readKind[G any](v *validator, top obj, key string, read func(*validator, string, *node, *[]string) G) []G {
	n := top.fs[key]
	if n == nil {
		return nil
	}
	var out []G
	names := []string{}
	for i, item := range v.array(key, n) {
		out = append(out, read(v, indexPath(key, i), item, &names))
	}
	return out
}

// name checks a grant's name against the earlier grants of its kind; the
// second of two equal names is the one reported.
func (v *validator) name(o obj, kind string, names *[]string) string {
	name := v.str(o, "name")
	if n, ok := o.fs["name"]; ok && n.kind != stringNode {
		return name // already reported as the wrong type
	}
	v.add(o.off("name"), checkName(o.at("name"), kind, name, *names)...)
	*names = append(*names, name)
	return name
}

func (v *validator) mcpServer(path string, n *node, names *[]string) MCPServer {
	o, ok := v.object(path, n, "an MCP server grant", "name", "url", "default_policy", "tool_rules", "new_tools")
	if !ok {
		return MCPServer{}
	}
	g := MCPServer{Name: v.name(o, KindMCP, names)}
	g.URL = v.str(o, "url")
	if v.required(o, "url", urlRequired) {
		v.add(o.off("url"), checkMCPURL(o.at("url"), g.URL)...)
	}
	g.DefaultPolicy = v.defaultPolicy(o)
	g.ToolRules = v.toolRules(o, v.mcpToolCheck(g))
	g.NewTools = v.newTools(o)
	return g
}

func (v *validator) skill(path string, n *node, names *[]string) Skill {
	o, ok := v.object(path, n, "a skill grant", "name", "skill", "default_policy", "tool_rules")
	if !ok {
		return Skill{}
	}
	g := Skill{Name: v.name(o, KindSkill, names), Skill: v.str(o, "skill")}
	if v.required(o, "skill", "skill is required: the name of an installed skill") && !v.cat.HasSkill(g.Skill) {
		v.add(o.off("skill"), fieldError(o.at("skill"), "unknown_skill", fmt.Sprintf(
			"no skill %s is installed", quoteShort(g.Skill))))
	}
	v.noPolicy(o, "skills have no policy: granting them is the decision")
	return g
}

func (v *validator) builtin(path string, n *node, names *[]string) Builtin {
	o, ok := v.object(path, n, "a built-in grant", "name", "default_policy", "tool_rules")
	if !ok {
		return Builtin{}
	}
	g := Builtin{Name: v.name(o, KindBuiltin, names)}
	v.noPolicy(o, "built-ins have no policy: granting them is the decision")
	return g
}

// noPolicy refuses policy fields on kinds whose grant is itself the decision.
func (v *validator) noPolicy(o obj, detail string) {
	for _, key := range []string{"default_policy", "tool_rules"} {
		if n, ok := o.fs[key]; ok {
			v.add(n.off, fieldError(o.at(key), "policy_not_allowed", detail))
		}
	}
}

func (v *validator) function(path string, n *node, names *[]string) Function {
	o, ok := v.object(path, n, "a function grant",
		"name", "package", "version", "origins", "default_policy", "tool_rules", "volume")
	if !ok {
		return Function{}
	}
	g := Function{Name: v.name(o, KindFn, names), Package: v.str(o, "package"), Version: v.str(o, "version")}
	tools, known := v.functionTools(o, g.Package, g.Version)
	g.Origins = v.origins(o)
	g.Volume = v.volumeAccess(o)
	g.DefaultPolicy = v.defaultPolicy(o)
	g.ToolRules = v.toolRules(o, func(tool string) string {
		if !known || slices.ContainsFunc(tools, func(t ToolDef) bool { return t.Name == tool }) {
			return ""
		}
		return fmt.Sprintf("function package %s %s has no tool %s; its tools are %s",
			quoteShort(g.Package), quoteShort(g.Version), quoteShort(tool), toolNames(tools))
	})
	return g
}

// functionTools looks the package version up; known is false when it cannot
// be checked (missing, or not installed), so tool rules are not judged twice.
func (v *validator) functionTools(o obj, pkg, version string) (tools []ToolDef, known bool) {
	pkgOK := v.required(o, "package", "package is required: the name of an installed function package")
	verOK := v.required(o, "version", "version is required: an installed version of the package, such as 1.0.0")
	if !pkgOK || !verOK {
		return nil, false
	}
	tools, ok := v.cat.FunctionTools(pkg, version)
	if !ok {
		v.add(o.off("package"), fieldError(o.at("package"), "unknown_function", fmt.Sprintf(
			"no function package %s version %s is installed", quoteShort(pkg), quoteShort(version))))
	}
	return tools, ok
}

// required reports a string field that is absent or empty with the code
// <key>_required; ok is false unless the field holds a non-empty string.
func (v *validator) required(o obj, key, detail string) bool {
	n, present := o.fs[key]
	if !present || (n.kind == stringNode && n.str == "") {
		v.add(o.off(key), fieldError(o.at(key), key+"_required", detail))
		return false
	}
	return n.kind == stringNode
}

func (v *validator) origins(o obj) []string {
	n, ok := o.fs["origins"]
	if !ok {
		return nil
	}
	var out []string
	for i, item := range v.array(o.at("origins"), n) {
		field := indexPath(o.at("origins"), i)
		if item.kind != stringNode {
			v.add(item.off, wrongType(field, "a string", item))
			continue
		}
		if errs := checkOrigin(field, item.str); errs != nil {
			v.add(item.off, errs...)
		} else if slices.Contains(out, item.str) {
			v.add(item.off, fieldError(field, "origin_duplicate", fmt.Sprintf(
				"origin %s is listed twice; list it once", quoteShort(item.str))))
		}
		out = append(out, item.str)
	}
	return out
}

func toolNames(tools []ToolDef) string {
	if len(tools) == 0 {
		return "none"
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return listWords(names, "and")
}
