package tools

import (
	"fmt"
	"slices"
)

// How a session offers its tools over MCP (the config's tools_as).
const (
	// ToolsFlat offers one MCP tool per offered tool; it is the default and
	// is stored as "" so that a config saying it and one leaving it out are
	// the same config.
	ToolsFlat = "flat"
	// ToolsCode offers three tools, search, fetch and do: the agent reads
	// the tools as TypeScript declarations of $ and calls them from a program.
	ToolsCode = "code"
)

// ToolsAsValues are the values tools_as may take, in the editor's order.
var ToolsAsValues = []string{ToolsFlat, ToolsCode}

// CodeMode reports whether a session of the config offers its tools as code.
func (c Config) CodeMode() bool { return c.ToolsAs == ToolsCode }

// toolsAs reads the config's tools_as: flat (or absent, or null) reads as "".
func (v *validator) toolsAs(top obj) string {
	n, present := top.fs["tools_as"]
	if !present || n.kind == nullNode {
		return ""
	}
	if n.kind != stringNode || !slices.Contains(ToolsAsValues, n.str) {
		found := n.kind.typeName()
		if n.kind == stringNode {
			found = quoteShort(n.str)
		}
		v.add(n.off, fieldError("tools_as", "invalid_tools_as", fmt.Sprintf(
			"tools_as must be flat or code (how a session offers its tools over MCP: one MCP tool each, or search, fetch and do over a typed $); found %s",
			found)))
		return ""
	}
	if n.str == ToolsFlat {
		return ""
	}
	return n.str
}
