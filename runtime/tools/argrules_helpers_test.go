package tools

// plainRules turns tool → policy into tool rules without argument rules.
func plainRules(m map[string]string) map[string]ToolRule {
	if m == nil {
		return nil
	}
	out := make(map[string]ToolRule, len(m))
	for t, p := range m {
		out[t] = ToolRule{Policy: p}
	}
	return out
}
