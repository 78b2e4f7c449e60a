package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/views/pages"
)

// ruleLine is a tool rule as the version page lists it: "exec → ask", then
// one line per argument rule ("exec rule 1: allow command `git *`").
func ruleLine(tool string, r tools.ToolRule) []string {
	policy := r.Policy
	if policy == "" {
		policy = "the grant's default"
	}
	out := []string{tool + " → " + policy}
	if len(r.Rules) > 0 {
		out[0] += " when no rule below matches"
	}
	for i, a := range r.Rules {
		out = append(out, fmt.Sprintf("%s rule %d: %s %s", tool, i+1, a.Policy, a.Describe()))
	}
	return out
}

// ruleRow fills a form row from a rule: its argument rules as indented JSON.
func ruleRow(tool string, r tools.ToolRule) pages.RuleRow {
	row := pages.RuleRow{Tool: tool, Policy: r.Policy}
	if row.Policy == "" {
		row.Policy = "inherit"
	}
	if len(r.Rules) > 0 {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if enc.Encode(r.Rules) == nil {
			row.When = string(bytes.TrimSpace(buf.Bytes()))
		}
	}
	return row
}

// ruleValue is a form row as a tool_rules value: the policy string, or an
// object with the argument rules as typed (the config parser judges them and
// names the field of any problem).
func ruleValue(r pages.RuleRow) []byte {
	if r.When == "" {
		v, _ := json.Marshal(r.Policy)
		return v
	}
	var obj bytes.Buffer
	obj.WriteByte('{')
	if r.Policy != "inherit" {
		p, _ := json.Marshal(r.Policy)
		obj.WriteString(`"policy":`)
		obj.Write(p)
		obj.WriteByte(',')
	}
	obj.WriteString(`"rules":`)
	obj.WriteString(r.When)
	obj.WriteByte('}')
	return obj.Bytes()
}

// badRuleJSON says which row's argument rules are not JSON, or "".
func badRuleJSON(f pages.GrantForm) string {
	for _, r := range f.Rules {
		if r.When == "" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(r.When), &v); err != nil {
			return fmt.Sprintf("the argument rules for %q are not valid JSON (%v); write a list such as [{\"policy\": \"allow\", \"command\": \"git *\"}]", r.Tool, err)
		}
		if _, ok := v.([]any); !ok {
			return fmt.Sprintf("the argument rules for %q must be a JSON list such as [{\"policy\": \"allow\", \"command\": \"git *\"}]", r.Tool)
		}
	}
	return ""
}

// argRuleLines are a tool's argument rules as "What the model sees" lists them.
func argRuleLines(rules []tools.ArgRule) []string {
	out := make([]string, len(rules))
	for i, a := range rules {
		out[i] = fmt.Sprintf("rule %d: %s %s", i+1, a.Policy, a.Describe())
	}
	return out
}
