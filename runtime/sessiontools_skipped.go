package runtime

import (
	"encoding/json"
	"fmt"

	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/tools"
)

// SkippedTool is a tool an MCP server listed that the session does not
// offer: over a discovery limit, or with a name clients cannot call.
type SkippedTool struct {
	Grant string `json:"grant"`
	// Name is the full name the tool would have had; "" with Tool.
	Name string `json:"name"`
	// Tool is the name the server listed, cut when long; "" stands for the
	// tools listed past the limit on their number, which are not kept.
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// storedTool is one entry of a cached discovery: a tool, or, with Skipped
// set, one the server listed that is kept out and why. Its JSON reads as a
// tools.ToolDef, so lists cached before skipping existed still load.
type storedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Skipped     string          `json:"skipped,omitempty"`
	// What tools/list said besides, passed on whole (tools.ToolDef).
	Title        string          `json:"title,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Meta         json.RawMessage `json:"meta,omitempty"`
}

// storedTools is what a discovery caches: the tools kept, then those
// skipped, then one entry counting the tools past the limit.
func storedTools(d mcpclient.Discovery) []storedTool {
	out := make([]storedTool, 0, len(d.Tools)+len(d.Skipped)+1)
	for _, t := range d.Tools {
		schema := t.InputSchema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, storedTool{Name: t.Name, Description: t.Description, InputSchema: schema,
			Title: t.Title, Annotations: t.Annotations, OutputSchema: t.OutputSchema, Meta: t.Meta})
	}
	for _, s := range d.Skipped {
		out = append(out, storedTool{Name: s.Name, Skipped: s.Reason})
	}
	switch {
	case d.More:
		out = append(out, storedTool{Skipped: fmt.Sprintf(
			"the server lists more tools than the limit of %d tools per server (--mcp-max-tools); its further pages were not read", len(d.Tools)+len(d.Skipped))})
	case d.Unlisted > 0:
		out = append(out, storedTool{Skipped: fmt.Sprintf(
			"%d more tools were listed past the limit of %d tools per server (--mcp-max-tools)", d.Unlisted, len(d.Tools)+len(d.Skipped))})
	}
	return out
}

// maxClientName is the longest tool name model APIs and MCP clients take.
const maxClientName = 64

// offerable splits what the server at grant listed into the tools the
// session can offer and those it skips: over a limit at discovery, or with
// a full name (mcp__<grant>__<tool>) that clients refuse.
func offerable(grant string, listed []storedTool) ([]tools.ToolDef, []SkippedTool) {
	defs := make([]tools.ToolDef, 0, len(listed))
	var skipped []SkippedTool
	for _, t := range listed {
		why := t.Skipped
		if why == "" {
			why = clientNameProblem(tools.FullName(tools.KindMCP, grant, t.Name))
		}
		if why == "" && t.Name != "" {
			if p := schemaShapeProblem(t.InputSchema); p != "" {
				why = "its input schema " + p
			}
		}
		if why != "" {
			s := SkippedTool{Grant: grant, Tool: t.Name, Reason: why}
			if t.Name != "" {
				s.Name = tools.FullName(tools.KindMCP, grant, t.Name)
			}
			skipped = append(skipped, s)
			continue
		}
		defs = append(defs, tools.ToolDef{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
			Title: t.Title, Annotations: t.Annotations, OutputSchema: t.OutputSchema, Meta: t.Meta})
	}
	return defs, skipped
}

// clientNameProblem says why clients would refuse a full tool name, or "":
// they take ^[a-zA-Z0-9_-]{1,64}$ only.
func clientNameProblem(full string) string {
	pos := 0
	for _, c := range full {
		pos++
		ok := c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
		if !ok {
			return fmt.Sprintf("its full name has %q at position %d; clients take only a-z, A-Z, 0-9, _ and - in a tool name", c, pos)
		}
	}
	if len(full) > maxClientName {
		return fmt.Sprintf("its full name %s is %d characters; clients take at most %d", full, len(full), maxClientName)
	}
	return ""
}

// unknownTool is the answer to a call of a tool the session does not offer,
// saying why when a person can act on it.
func (rep toolsReport) unknownTool(p Principal, name string) *Error {
	detail := fmt.Sprintf("this session offers no tool %q: Session.tools lists what it offers", name)
	kind, grant, tool, err := tools.ParseFullName(name)
	if err == nil && kind == tools.KindMCP {
		for _, s := range rep.skipped {
			if s.Grant == grant && s.Tool == tool && tool != "" {
				detail = fmt.Sprintf("this session offers no tool %q: MCP server %q lists it, but it is skipped: %s", name, grant, s.Reason)
				return &Error{Kind: KindNotFound, Code: "unknown_tool", Title: "Unknown tool", Field: "tool", Detail: detail}
			}
		}
	}
	if err == nil && kind == tools.KindMCP && rep.failed[grant] != "" {
		// The reason may name the server's address or what it answered:
		// people see it, the session's agent only that there is one.
		why := "an operator sees why on the session's page"
		if p.Kind == PrincipalUser {
			why = rep.failed[grant]
		}
		detail = fmt.Sprintf("this session offers no tool %q: MCP server %q could not list its tools for this session (%s); Session.tools?refresh=true tries again",
			name, grant, why)
	}
	return &Error{Kind: KindNotFound, Code: "unknown_tool", Title: "Unknown tool", Field: "tool", Detail: detail}
}
