package tools

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

func init() {
	for code, title := range map[string]string{
		"rules_too_many":      "Too many argument rules",
		"condition_required":  "Rule without a condition",
		"command_not_here":    "Command pattern on a tool without commands",
		"pattern_too_long":    "Pattern is too long",
		"pattern_too_wild":    "Pattern has too many *",
		"pattern_required":    "Pattern is required",
		"invalid_condition":   "Invalid condition",
		"value_too_long":      "Value is too long",
		"values_too_many":     "Too many values",
		"field_name_invalid":  "Invalid input field name",
		"number_out_of_range": "Number out of range",
	} {
		titles[code] = title
	}
}

// ruleObject reads a tool rule written as an object: {"policy": …,
// "rules": […]}. commands says whether the tool takes command patterns
// (sandbox exec).
func (v *validator) ruleObject(field, tool string, n *node, commands bool) ToolRule {
	o, ok := v.object(field, n, "a tool rule", "policy", "rules")
	if !ok {
		return ToolRule{}
	}
	var r ToolRule
	if p, present := o.fs["policy"]; present {
		if p.kind != stringNode {
			v.add(p.off, wrongType(o.at("policy"), "a string: allow, ask or deny", p))
		} else if !slices.Contains(policies, p.str) {
			v.add(p.off, fieldError(o.at("policy"), "invalid_policy", fmt.Sprintf(
				"the policy of the tool rule for %s must be allow, ask or deny; found %s", quoteShort(tool), quoteShort(p.str))))
		}
		r.Policy = p.str
	}
	rn, present := o.fs["rules"]
	if !present {
		if _, hasPolicy := o.fs["policy"]; !hasPolicy {
			v.add(o.n.off, fieldError(field, "policy_required", fmt.Sprintf(
				"the tool rule for %s needs a policy, rules, or both", quoteShort(tool))))
		}
		return r
	}
	items := v.array(o.at("rules"), rn)
	if len(items) > MaxArgRules {
		v.add(rn.off, fieldError(o.at("rules"), "rules_too_many", fmt.Sprintf(
			"the tool rule for %s may list at most %d rules; it lists %d", quoteShort(tool), MaxArgRules, len(items))))
		return r
	}
	for i, item := range items {
		r.Rules = append(r.Rules, v.argRule(indexPath(o.at("rules"), i), tool, i+1, item, commands))
	}
	if len(items) == 0 && o.fs["policy"] == nil {
		v.add(rn.off, fieldError(o.at("rules"), "policy_required", fmt.Sprintf(
			"the tool rule for %s has no rules and no policy: give a policy, rules, or both", quoteShort(tool))))
	}
	return r
}

// argRule reads one argument rule; what names it in messages ("rule 2 of exec").
func (v *validator) argRule(path, tool string, num int, n *node, commands bool) ArgRule {
	what := fmt.Sprintf("rule %d of %s", num, quoteShort(tool))
	o, ok := v.object(path, n, what, "policy", "command", "operators", "input")
	if !ok {
		return ArgRule{}
	}
	var r ArgRule
	p, present := o.fs["policy"]
	switch {
	case !present:
		v.add(o.off("policy"), fieldError(o.at("policy"), "policy_required", what+" needs a policy: allow, ask or deny"))
	case p.kind != stringNode:
		v.add(p.off, wrongType(o.at("policy"), "a string: allow, ask or deny", p))
	case !slices.Contains(policies, p.str):
		v.add(p.off, fieldError(o.at("policy"), "invalid_policy", fmt.Sprintf(
			"the policy of %s must be allow, ask or deny; found %s", what, quoteShort(p.str))))
	default:
		r.Policy = p.str
	}
	if c, present := o.fs["command"]; present {
		switch {
		case !commands:
			v.add(c.off, fieldError(o.at("command"), "command_not_here", fmt.Sprintf(
				"%s has a command pattern, but only a sandbox's exec runs commands; test input fields with \"input\" instead", what)))
		case c.kind != stringNode:
			v.add(c.off, wrongType(o.at("command"), "a string such as \"git *\"", c))
		default:
			r.Command = normalizeCommand(c.str)
			if r.Command == "" {
				v.add(c.off, fieldError(o.at("command"), "pattern_required", what+" has an empty command pattern; give one such as \"git *\""))
			} else {
				v.add(c.off, checkPattern(o.at("command"), what+"'s command pattern", r.Command)...)
			}
		}
	}
	if b, present := o.fs["operators"]; present {
		switch {
		case b.kind != boolNode:
			v.add(b.off, wrongType(o.at("operators"), "true or false", b))
		case o.fs["command"] == nil:
			v.add(b.off, fieldError(o.at("operators"), "invalid_condition", what+" sets operators without a command pattern"))
		default:
			r.Operators = b.str == "true"
		}
	}
	if in, present := o.fs["input"]; present {
		r.Input = v.inputConditions(o.at("input"), what, in)
	}
	if o.fs["command"] == nil && o.fs["input"] == nil {
		v.add(o.n.off, fieldError(path, "condition_required", fmt.Sprintf(
			"%s has no condition: give \"command\" (sandbox exec) or \"input\"; a rule for every call is the tool rule's own policy", what)))
	}
	return r
}

func (v *validator) inputConditions(path, what string, n *node) map[string]Condition {
	if n.kind != objectNode {
		v.add(n.off, wrongType(path, "an object of input field → condition", n))
		return nil
	}
	if len(n.fields) == 0 {
		v.add(n.off, fieldError(path, "condition_required", what+" has an empty input object: name at least one field"))
		return nil
	}
	if len(n.fields) > MaxRuleConditions {
		v.add(n.off, fieldError(path, "rules_too_many", fmt.Sprintf(
			"%s may test at most %d input fields; it tests %d", what, MaxRuleConditions, len(n.fields))))
		return nil
	}
	out := map[string]Condition{}
	for _, m := range n.fields {
		field := joinPath(path, m.key)
		switch {
		case m.key == "":
			v.add(m.val.off, fieldError(field, "field_name_invalid", what+" tests an input field with an empty name"))
			continue
		case utf8.RuneCountInString(m.key) > MaxFieldLength:
			v.add(m.val.off, fieldError(field, "field_name_invalid", fmt.Sprintf(
				"an input field's name must be at most %d characters; this one has %d", MaxFieldLength, utf8.RuneCountInString(m.key))))
			continue
		}
		if _, dup := out[m.key]; dup {
			v.add(m.val.off, fieldError(field, "duplicate_field", fmt.Sprintf(
				"%s tests the input field %s twice; give it once", what, quoteShort(m.key))))
			continue
		}
		out[m.key] = v.condition(field, fmt.Sprintf("%s's condition on %s", what, quoteShort(m.key)), m.val)
	}
	return out
}

var conditionOps = []string{"equals", "one_of", "at_most", "at_least", "glob"}

func (v *validator) condition(path, what string, n *node) Condition {
	o, ok := v.object(path, n, "a condition", conditionOps...)
	if !ok {
		return Condition{}
	}
	if len(o.fs) == 0 {
		if len(n.fields) == 0 { // unknown operators are reported on their own
			v.add(n.off, fieldError(path, "invalid_condition", what+" is empty: give equals, one_of, at_most, at_least or glob"))
		}
		return Condition{}
	}
	var c Condition
	if e, present := o.fs["equals"]; present {
		if s, ok := v.scalar(o.at("equals"), what, e); ok {
			c.Equals = &s
		}
	}
	if l, present := o.fs["one_of"]; present {
		items := v.array(o.at("one_of"), l)
		switch {
		case l.kind == arrayNode && len(items) == 0:
			v.add(l.off, fieldError(o.at("one_of"), "invalid_condition", what+" has an empty one_of: list at least one value"))
		case len(items) > MaxOneOf:
			v.add(l.off, fieldError(o.at("one_of"), "values_too_many", fmt.Sprintf(
				"%s's one_of may list at most %d values; it lists %d", what, MaxOneOf, len(items))))
		default:
			c.OneOf = []Scalar{}
			for i, item := range items {
				if s, ok := v.scalar(indexPath(o.at("one_of"), i), what, item); ok {
					c.OneOf = append(c.OneOf, s)
				}
			}
		}
	}
	c.AtMost = v.bound(o, "at_most", what)
	c.AtLeast = v.bound(o, "at_least", what)
	if c.AtMost != nil && c.AtLeast != nil && *c.AtLeast > *c.AtMost {
		v.add(o.fs["at_least"].off, fieldError(o.at("at_least"), "invalid_condition", fmt.Sprintf(
			"%s can never hold: at_least %g is more than at_most %g", what, *c.AtLeast, *c.AtMost)))
	}
	if g, present := o.fs["glob"]; present {
		if g.kind != stringNode {
			v.add(g.off, wrongType(o.at("glob"), "a string such as \"/workspace/*\"", g))
		} else {
			v.add(g.off, checkPattern(o.at("glob"), what+"'s glob", g.str)...)
			c.Glob = &g.str
		}
	}
	return c
}

func (v *validator) scalar(path, what string, n *node) (Scalar, bool) {
	switch n.kind {
	case nullNode:
		return Scalar{nil}, true
	case boolNode:
		return Scalar{n.str == "true"}, true
	case numberNode:
		f, ok := v.number(path, what, n)
		return Scalar{f}, ok
	case stringNode:
		if l := utf8.RuneCountInString(n.str); l > MaxValueLength {
			v.add(n.off, fieldError(path, "value_too_long", fmt.Sprintf(
				"a value in %s must be at most %d characters; this one has %d", what, MaxValueLength, l)))
			return Scalar{}, false
		}
		return Scalar{n.str}, true
	}
	v.add(n.off, wrongType(path, "a string, number, boolean or null", n))
	return Scalar{}, false
}

func (v *validator) number(path, what string, n *node) (float64, bool) {
	f, err := strconv.ParseFloat(n.str, 64)
	if err != nil || math.IsInf(f, 0) {
		v.add(n.off, fieldError(path, "number_out_of_range", fmt.Sprintf(
			"%s has a number %s beyond what a 64-bit float holds", what, quoteShort(n.str))))
		return 0, false
	}
	return f, true
}

func (v *validator) bound(o obj, key, what string) *float64 {
	n, present := o.fs[key]
	if !present {
		return nil
	}
	if n.kind != numberNode {
		v.add(n.off, wrongType(o.at(key), "a number", n))
		return nil
	}
	f, ok := v.number(o.at(key), what, n)
	if !ok {
		return nil
	}
	return &f
}

// checkPattern enforces a pattern's limits: length in characters and number
// of *, both named in the message.
func checkPattern(path, what, p string) []FieldError {
	if l := utf8.RuneCountInString(p); l > MaxPatternLength {
		return []FieldError{fieldError(path, "pattern_too_long", fmt.Sprintf(
			"%s must be at most %d characters; it has %d", what, MaxPatternLength, l))}
	}
	if s := strings.Count(p, "*"); s > MaxPatternStars {
		return []FieldError{fieldError(path, "pattern_too_wild", fmt.Sprintf(
			"%s may have at most %d *; it has %d", what, MaxPatternStars, s))}
	}
	return nil
}
