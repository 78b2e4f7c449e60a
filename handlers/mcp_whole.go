package handlers

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
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

// maxRecordWords is the most of a call's output recorded (runtime's maxOutputBytes).
const maxRecordWords = "1 MiB"

// mcpServerResult is an MCP server's recorded answer (runtime's mcpRecord)
// as the server sent it: its content list whole, structuredContent, isError
// and _meta. ok is false when the record is not one (an output clipped
// past the log's limit is a string).
func mcpServerResult(call runtime.ToolCallView) (*mcp.CallToolResult, bool) {
	if call.Kind != tools.KindMCP || len(call.Output) == 0 {
		return nil, false
	}
	if call.OutputTruncated {
		if call.Status != runtime.CallSucceeded {
			return nil, false
		}
		// Not the server's answer any more: say so rather than pass on a
		// cut record as if it were the result (it would not match the
		// tool's outputSchema either).
		return toolError("the server's answer was cut to the " + maxRecordWords + " a call's record keeps; ToolCall.get " + call.ID + " has what was kept"), true
	}
	var rec struct {
		Content    json.RawMessage `json:"content"`
		Structured json.RawMessage `json:"structured"`
		IsError    bool            `json:"is_error"`
		Meta       json.RawMessage `json:"meta"`
	}
	if json.Unmarshal(call.Output, &rec) != nil || rec.Content == nil {
		return nil, false
	}
	wire := map[string]any{"content": rec.Content}
	if len(rec.Structured) > 0 && string(rec.Structured) != "null" {
		wire["structuredContent"] = rec.Structured
	}
	if rec.IsError {
		wire["isError"] = true
	}
	if len(rec.Meta) > 0 && string(rec.Meta) != "null" {
		wire["_meta"] = rec.Meta
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return nil, false
	}
	res := &mcp.CallToolResult{}
	if json.Unmarshal(b, res) != nil {
		return nil, false
	}
	return res, true
}
