package handlers

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
)

// mcpTool is an offered tool as tools/list answers it: for an MCP server's
// tool, its title, annotations, output schema and _meta as the server
// listed them, passed on whole.
func mcpTool(t runtime.OfferedTool) *mcp.Tool {
	out := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Title: t.Title}
	if len(t.Annotations) > 0 {
		var a mcp.ToolAnnotations
		if json.Unmarshal(t.Annotations, &a) == nil {
			out.Annotations = &a
		}
	}
	if len(t.OutputSchema) > 0 {
		out.OutputSchema = t.OutputSchema
	}
	if len(t.Meta) > 0 {
		var m mcp.Meta
		if json.Unmarshal(t.Meta, &m) == nil {
			out.Meta = m
		}
	}
	return out
}
