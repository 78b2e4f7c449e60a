package tools

import (
	"fmt"
	"slices"
	"strings"
)

// New-tool settings of an MCP grant (new_tools): what a session does with a
// tool the server lists that the published version did not pin. "" reads
// as deny.
const (
	NewToolsDeny  = "deny"
	NewToolsAsk   = "ask"
	NewToolsAllow = "allow"
)

// MCPToolLister is what a Catalog may also answer: the tools fetched for an
// MCP server URL while editing the version being checked. A catalog without
// it, or false, leaves MCP tool rules unchecked (the tools are not known).
type MCPToolLister interface {
	MCPTools(url string) ([]ToolDef, bool)
}

// newTools reads an MCP grant's new_tools setting.
func (v *validator) newTools(o obj) string {
	n, present := o.fs["new_tools"]
	if !present || n.kind == nullNode {
		return ""
	}
	if n.kind != stringNode || !slices.Contains([]string{NewToolsDeny, NewToolsAsk, NewToolsAllow}, n.str) {
		v.add(n.off, fieldError(o.at("new_tools"), "invalid_new_tools", fmt.Sprintf(
			"new_tools must be deny, ask or allow (what a session does with a tool the server adds after publishing); found %s",
			quoteShort(v.str(o, "new_tools")))))
	}
	return n.str
}

// mcpToolCheck checks a tool rule's name against the tools fetched for the
// grant's URL, suggesting the close name for a typo.
func (v *validator) mcpToolCheck(g MCPServer) func(string) string {
	lister, ok := v.cat.(MCPToolLister)
	if !ok || g.URL == "" {
		return anyTool
	}
	defs, known := lister.MCPTools(g.URL)
	if !known {
		return anyTool
	}
	return func(tool string) string {
		if slices.ContainsFunc(defs, func(t ToolDef) bool { return t.Name == tool }) {
			return ""
		}
		hint := ""
		if c := CloseName(tool, defs); c != "" {
			hint = fmt.Sprintf("; did you mean %s?", quoteShort(c))
		}
		return fmt.Sprintf("MCP server %s has no tool %s in the tools fetched from it%s Its tools are %s",
			quoteShort(g.Name), quoteShort(tool), hint, toolNames(defs))
	}
}

// CloseName is the tool whose name is closest to name (case, - for _, or
// at most two edits apart), or "".
func CloseName(name string, defs []ToolDef) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }
	best, bestD := "", 3
	for _, d := range defs {
		if norm(d.Name) == norm(name) {
			return d.Name
		}
		if dist := editDistance(name, d.Name, bestD); dist < bestD {
			best, bestD = d.Name, dist
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b, or limit when it
// is limit or more; names are at most MaxToolNameLength, so it stays small.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra)-len(rb) >= limit || len(rb)-len(ra) >= limit {
		return limit
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit)
}
