package tools

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxToolNameLength is the longest tool name a tool rule may name, in
// characters: the MCP specification's limit for tool names.
const MaxToolNameLength = 128

// Policy sources, as List reports where a tool's policy came from.
const (
	SourceDefault = "default"
	SourceRule    = "rule"
)

var policies = []string{PolicyAllow, PolicyAsk, PolicyDeny}

// Effective is the policy that governs one tool of a grant: the tool's own
// rule when it has one with a policy (source "rule"), else the grant's
// default (source "default"). Kinds without a policy pass "" and get "", "".
// A tool's argument rules, if any, are applied per call by Decide.
func Effective(defaultPolicy string, rules map[string]ToolRule, tool string) (policy, source string) {
	if r, ok := rules[tool]; ok && r.Policy != "" {
		return r.Policy, SourceRule
	}
	if defaultPolicy == "" {
		return "", ""
	}
	return defaultPolicy, SourceDefault
}

func (v *validator) defaultPolicy(o obj) string {
	p := v.str(o, "default_policy")
	n, present := o.fs["default_policy"]
	switch {
	case !present:
		v.add(o.off("default_policy"), fieldError(o.at("default_policy"), "policy_required",
			"default_policy is required: allow, ask or deny"))
	case n.kind == stringNode && !slices.Contains(policies, p):
		v.add(n.off, fieldError(o.at("default_policy"), "invalid_policy", fmt.Sprintf(
			"default_policy must be allow, ask or deny; found %s", quoteShort(p))))
	}
	return p
}

// anyTool accepts every tool name: an MCP server's tools are known only
// once discovered, and a rule may be written before that.
func anyTool(string) string { return "" }

// toolRules reads a grant's tool_rules; check explains why a tool name is not
// one of the grant's tools, or returns "". Empty rules read as nil.
func (v *validator) toolRules(o obj, check func(tool string) string) map[string]ToolRule {
	n, present := o.fs["tool_rules"]
	if !present || n.kind == nullNode {
		return nil
	}
	path := o.at("tool_rules")
	if n.kind != objectNode {
		v.add(n.off, wrongType(path, "an object", n))
		return nil
	}
	// Only a sandbox's exec runs commands, so only its rules take patterns.
	commands := strings.HasPrefix(o.path, "sandboxes[")
	rules := map[string]ToolRule{}
	for _, m := range n.fields {
		field := joinPath(path, m.key)
		if _, dup := rules[m.key]; dup {
			v.add(m.val.off, fieldError(field, "duplicate_field", fmt.Sprintf(
				"the tool rule for %s is given twice; give it once", quoteShort(m.key))))
			continue
		}
		v.add(m.val.off, ruleTool(field, m.key, check)...)
		if m.val.kind == objectNode {
			rules[m.key] = v.ruleObject(field, m.key, m.val, commands)
			continue
		}
		rules[m.key] = ToolRule{Policy: v.rulePolicy(field, m)}
	}
	if len(rules) == 0 {
		return nil
	}
	return rules
}

func ruleTool(field, tool string, check func(string) string) []FieldError {
	if tool == "" {
		return []FieldError{fieldError(field, "tool_name_required",
			"a tool rule needs the tool's exact name; this one has an empty name")}
	}
	if n := utf8.RuneCountInString(tool); n > MaxToolNameLength {
		return []FieldError{fieldError(field, "tool_name_too_long", fmt.Sprintf(
			"a tool name must be at most %d characters; this one has %d", MaxToolNameLength, n))}
	}
	if why := check(tool); why != "" {
		return []FieldError{fieldError(field, "unknown_tool", why)}
	}
	return nil
}

func (v *validator) rulePolicy(field string, m member) string {
	if m.val.kind != stringNode {
		v.add(m.val.off, fieldError(field, "invalid_type", fmt.Sprintf(
			"the tool rule for %s must be allow, ask or deny as a string, or an object with a policy and argument rules; found %s",
			quoteShort(m.key), m.val.kind.typeName())))
		return ""
	}
	if !slices.Contains(policies, m.val.str) {
		v.add(m.val.off, fieldError(field, "invalid_policy", fmt.Sprintf(
			"the tool rule for %s must be allow, ask or deny; found %s", quoteShort(m.key), quoteShort(m.val.str))))
	}
	return m.val.str
}
