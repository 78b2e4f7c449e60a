package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of argument rules, each named in the error that enforces it. Rules
// are evaluated on every call, so their number and size bound a call's work:
// at most MaxArgRules × (MaxRuleConditions + 1) globs of MaxPatternLength,
// each matched in time linear in the input (glob.go).
const (
	MaxArgRules       = 64  // rules a tool rule may list
	MaxRuleConditions = 16  // input fields one rule may test
	MaxPatternLength  = 256 // characters of a command pattern or a glob
	MaxPatternStars   = 16  // * in one pattern
	MaxOneOf          = 64  // values of one one_of
	MaxValueLength    = 256 // characters of a string in equals or one_of
	MaxFieldLength    = 128 // characters of an input field's name
)

// ToolRule is what a version says about one tool of a grant: its Policy
// (allow, ask or deny) and, optionally, argument Rules that look at each
// call's input. A rule without Rules is written as the plain string of its
// policy, as before; with Rules it is an object:
//
//	"exec": {"policy": "ask", "rules": [{"policy": "allow", "command": "git *"}]}
//
// Policy "" (left out of the object) means the grant's default_policy governs
// the calls no rule matches.
type ToolRule struct {
	Policy string    `json:"policy,omitempty"`
	Rules  []ArgRule `json:"rules,omitempty"`
}

// MarshalJSON writes a rule without argument rules as its policy string, so
// configs without them export exactly as before.
func (r ToolRule) MarshalJSON() ([]byte, error) {
	if len(r.Rules) == 0 {
		return json.Marshal(r.Policy)
	}
	type plain ToolRule
	return marshalText(plain(r))
}

// marshalText is json.Marshal keeping < > & as typed: a pattern such as
// "make > log" reads in an exported config as it was written.
func marshalText(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads either form; Parse is the strict reader, this one lets
// Go callers decode a config they exported.
func (r *ToolRule) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		*r = ToolRule{}
		return json.Unmarshal(b, &r.Policy)
	}
	type plain ToolRule
	var p plain
	err := json.Unmarshal(b, &p)
	*r = ToolRule(p)
	return err
}

// ArgRule is one argument rule: Policy applies to a call when every
// condition holds. Command is a command pattern for sandbox exec (see
// CommandMatches); Input tests input fields by name. A rule has at least one
// condition.
type ArgRule struct {
	Policy    string               `json:"policy"`
	Command   string               `json:"command,omitempty"`
	Operators bool                 `json:"operators,omitempty"`
	Input     map[string]Condition `json:"input,omitempty"`
}

// Condition tests one input field; every operator given must hold.
type Condition struct {
	Equals  *Scalar  `json:"equals,omitempty"`
	OneOf   []Scalar `json:"one_of,omitempty"`
	AtMost  *float64 `json:"at_most,omitempty"`
	AtLeast *float64 `json:"at_least,omitempty"`
	Glob    *string  `json:"glob,omitempty"`
}

// Scalar is a JSON string, number (float64), boolean or null (nil).
type Scalar struct{ V any }

// MarshalJSON writes the value itself.
func (s Scalar) MarshalJSON() ([]byte, error) { return marshalText(s.V) }

// UnmarshalJSON reads a scalar; objects and arrays are refused.
func (s *Scalar) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v.(type) {
	case nil, string, float64, bool:
		s.V = v
		return nil
	}
	return fmt.Errorf("tools: %s is not a string, number, boolean or null", b)
}

// Decision is what governs one call: the policy, where it came from
// (SourceRule, SourceDefault, or "" for kinds without policy), the argument
// rule that decided (1-based; 0 when none did) and Why in words, as the
// approval card and the audit log show it after "because".
type Decision struct {
	Policy string `json:"policy"`
	Source string `json:"source"`
	Rule   int    `json:"rule,omitempty"`
	Why    string `json:"why"`
}

// policyRank orders policies for "deny beats ask beats allow".
func policyRank(p string) int {
	switch p {
	case PolicyDeny:
		return 3
	case PolicyAsk:
		return 2
	case PolicyAllow:
		return 1
	}
	return 0
}

// Decide is the policy for one call of tool t with this input (a JSON
// object). A tool without argument rules gets its listed policy. Otherwise
// every rule is tried: of the rules that match, the strictest policy wins
// (deny beats ask beats allow), the first such rule in order naming it; when
// none matches, the tool's own policy (or the grant's default) governs.
// The work is bounded by the rule limits and linear in the input's size.
func Decide(t Tool, input json.RawMessage) Decision {
	if len(t.Rules) == 0 {
		return Decision{Policy: t.Policy, Source: t.PolicySource, Why: plainWhy(t)}
	}
	in := readCallInput(t, input, slices.ContainsFunc(t.Rules, func(r ArgRule) bool { return len(r.Input) > 0 }))
	best, bestRank := 0, 0
	for i, r := range t.Rules {
		if rank := policyRank(r.Policy); rank > bestRank && r.matches(in) {
			best, bestRank = i+1, rank
		}
	}
	if best > 0 {
		r := t.Rules[best-1]
		return Decision{Policy: r.Policy, Source: SourceRule, Rule: best,
			Why: fmt.Sprintf("rule %d: %s %s", best, r.Policy, r.Describe())}
	}
	why := "no rule matched " + in.summary(t.Rules)
	if t.PolicySource == SourceDefault {
		why += "; the grant's default policy is " + t.Policy
	} else {
		why += "; the tool's own policy is " + t.Policy
	}
	return Decision{Policy: t.Policy, Source: t.PolicySource, Why: why}
}

func plainWhy(t Tool) string {
	switch t.PolicySource {
	case SourceRule:
		return fmt.Sprintf("the tool rule for %s is %s", t.Tool, t.Policy)
	case SourceDefault:
		return "the grant's default policy is " + t.Policy
	}
	return ""
}

// Describe says what a rule tests, as the editor and the approval card show
// it: command `git *`, amount at most 100, currency one of "EUR", "USD".
func (r ArgRule) Describe() string {
	var parts []string
	if r.Command != "" || r.Operators {
		c := "command `" + r.Command + "`"
		if r.Operators {
			c += " (shell operators allowed)"
		}
		parts = append(parts, c)
	}
	for _, f := range sortedFields(r.Input) {
		parts = append(parts, describeCondition(f, r.Input[f]))
	}
	return strings.Join(parts, " and ")
}

func describeCondition(field string, c Condition) string {
	var ops []string
	if c.Equals != nil {
		ops = append(ops, "is "+scalarText(*c.Equals))
	}
	if c.OneOf != nil {
		vals := make([]string, len(c.OneOf))
		for i, v := range c.OneOf {
			vals[i] = scalarText(v)
		}
		ops = append(ops, "one of "+strings.Join(vals, ", "))
	}
	if c.AtLeast != nil {
		ops = append(ops, "at least "+strconv.FormatFloat(*c.AtLeast, 'g', -1, 64))
	}
	if c.AtMost != nil {
		ops = append(ops, "at most "+strconv.FormatFloat(*c.AtMost, 'g', -1, 64))
	}
	if c.Glob != nil {
		ops = append(ops, "matches `"+*c.Glob+"`")
	}
	return field + " " + strings.Join(ops, ", ")
}

func scalarText(s Scalar) string {
	b, _ := marshalText(s.V)
	return string(b)
}

func sortedFields(m map[string]Condition) []string {
	out := make([]string, 0, len(m))
	for f := range m {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// callInput is a call's input as the rules read it.
type callInput struct {
	exec    bool
	command string // sandbox exec's command, as the sandbox decodes it
	cmdOK   bool
	env     bool                    // exec sets environment variables
	fields  map[string][]inputField // top-level fields by foldKey, every copy in order
}

// inputField is one top-level key of a call's input and its value.
type inputField struct {
	key   string
	value json.RawMessage
}

// foldKey is a field name as a case-insensitive decoder reads it: Go's
// encoding/json gives {"repo": …, "Repo": …} to the same struct field (the
// last one wins), as many tool servers decode their input.
func foldKey(k string) string { return strings.ToLower(strings.ToUpper(k)) }

// field is the one value of field f a rule can trust: the input gives f
// once, and no other key that a case-insensitive server reads as f.
func (in callInput) field(f string) (json.RawMessage, bool) {
	copies := in.fields[foldKey(f)]
	if len(copies) != 1 || copies[0].key != f {
		return nil, false
	}
	return copies[0].value, true
}

// readCallInput reads the top-level fields once, when some rule tests them,
// keeping every copy of a key given twice (or in another case): which copy a
// server reads is its own, so an allow rule trusts none of them and a deny
// or ask rule catches any of them (matches).
func readCallInput(t Tool, raw json.RawMessage, fields bool) callInput {
	in := callInput{exec: t.Kind == KindSandbox && t.Tool == SandboxTool, fields: map[string][]inputField{}}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); fields && err == nil && tok == json.Delim('{') {
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				break
			}
			k, _ := kt.(string)
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				break
			}
			in.fields[foldKey(k)] = append(in.fields[foldKey(k)], inputField{k, v})
		}
	}
	if in.exec {
		// Decoded as the sandbox decodes it (runtime's decodeExec), so the
		// rule sees the command that would run.
		var e struct {
			Command string            `json:"command"`
			Env     map[string]string `json:"env"`
		}
		if json.Unmarshal(raw, &e) == nil {
			in.command, in.cmdOK, in.env = e.Command, true, len(e.Env) > 0
		}
	}
	return in
}

// summary shows what the rules looked at, for "no rule matched …".
func (in callInput) summary(rules []ArgRule) string {
	if in.exec && slices.ContainsFunc(rules, func(r ArgRule) bool { return r.Command != "" }) {
		return "`" + clipRunes(normalizeCommand(in.command), 200) + "`"
	}
	var fields []string
	for _, r := range rules {
		for f := range r.Input {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	slices.Sort(fields)
	var parts []string
	for _, f := range fields {
		text := "missing"
		if v, ok := in.field(f); ok {
			text = clipRunes(string(v), 60)
		} else if len(in.fields[foldKey(f)]) > 0 {
			text = "ambiguous (given twice, or in another case)"
		}
		parts = append(parts, f+"="+text)
		if len(parts) == 8 {
			parts = append(parts, "…")
			break
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// matches reports whether every condition of the rule holds for the input.
// A condition that cannot be evaluated (missing field, other type,
// unreadable number) does not hold. A field the input gives more than once
// (twice, or as "repo" and "Repo") holds for an allow rule never, and for a
// deny or ask rule when any copy holds: no copy a server may read slips
// past a rule that holds calls back.
func (r ArgRule) matches(in callInput) bool {
	if r.Command != "" || r.Operators {
		if !in.exec || !in.cmdOK {
			return false
		}
		if !CommandMatches(r.Command, r.Operators, in.command, in.env, r.Policy != PolicyAllow) {
			return false
		}
	}
	for f, c := range r.Input {
		if r.Policy != PolicyAllow {
			if !slices.ContainsFunc(in.fields[foldKey(f)], func(v inputField) bool { return c.holds(v.value) }) {
				return false
			}
			continue
		}
		v, ok := in.field(f)
		if !ok || !c.holds(v) {
			return false
		}
	}
	return true
}

// holds tests one field's value; every operator given must hold.
func (c Condition) holds(raw json.RawMessage) bool {
	v, ok := scalarOf(raw)
	if !ok {
		return false
	}
	if c.Equals != nil && !scalarEqual(*c.Equals, v) {
		return false
	}
	if c.OneOf != nil && !slices.ContainsFunc(c.OneOf, func(s Scalar) bool { return scalarEqual(s, v) }) {
		return false
	}
	if c.AtMost != nil || c.AtLeast != nil {
		n, isNum := v.V.(float64)
		if !isNum || (c.AtMost != nil && n > *c.AtMost) || (c.AtLeast != nil && n < *c.AtLeast) {
			return false
		}
	}
	if c.Glob != nil {
		s, isStr := v.V.(string)
		if !isStr || !Glob(*c.Glob, s) {
			return false
		}
	}
	return true
}

// scalarOf reads a field's value; objects, arrays and numbers out of
// float64's range are not scalars a condition can test.
func scalarOf(raw json.RawMessage) (Scalar, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Scalar{}, false
	}
	switch raw[0] {
	case '{', '[':
		return Scalar{}, false
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return Scalar{}, false
		}
		return Scalar{s}, true
	case 't', 'f':
		return Scalar{raw[0] == 't'}, true
	case 'n':
		return Scalar{nil}, true
	}
	n, err := strconv.ParseFloat(string(raw), 64)
	if err != nil { // out of range: ±Inf would compare as no finite bound can
		return Scalar{}, false
	}
	return Scalar{n}, true
}

func scalarEqual(a, b Scalar) bool {
	switch x := a.V.(type) {
	case string:
		y, ok := b.V.(string)
		return ok && x == y
	case float64:
		y, ok := b.V.(float64)
		return ok && x == y
	case bool:
		y, ok := b.V.(bool)
		return ok && x == y
	case nil:
		return b.V == nil
	}
	return false
}

// anyOffered reports whether some call of a tool can be let through: its
// policy or one of its argument rules is not deny.
func anyOffered(policy string, rules []ArgRule) bool {
	return policy != PolicyDeny || slices.ContainsFunc(rules, func(r ArgRule) bool { return r.Policy != PolicyDeny })
}

// Text is a tool rule on one line: its policy alone, or its JSON when it has
// argument rules (as a version diff compares them).
func (r ToolRule) Text() string {
	if len(r.Rules) == 0 {
		return r.Policy
	}
	b, _ := marshalText(r)
	return string(b)
}
