package mcpclient

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// keepExtras copies what tools/list said of t besides its name, description
// and input schema (its annotations, output schema and _meta) into tool, so
// a session's clients see the tool as the server listed it. Each is bounded
// like the input schema (--mcp-max-schema-bytes) and its title like the
// description; "" means kept, otherwise why the tool is skipped.
func (p *Pool) keepExtras(t *mcp.Tool, tool *Tool) string {
	o := p.opts
	if n := len(t.Title); n > o.MaxDescriptionBytes {
		return fmt.Sprintf("its title is %d bytes; the limit is %s (--mcp-max-description-bytes)", n, sizeWords(int64(o.MaxDescriptionBytes)))
	}
	for _, f := range []struct {
		what string
		v    any
		dst  *json.RawMessage
	}{
		{"annotations", t.Annotations, &tool.Annotations},
		{"output schema", t.OutputSchema, &tool.OutputSchema},
		{"_meta", t.Meta, &tool.Meta},
	} {
		if f.v == nil {
			continue
		}
		if m, ok := f.v.(mcp.Meta); ok && len(m) == 0 {
			continue
		}
		if a, ok := f.v.(*mcp.ToolAnnotations); ok && a == nil {
			continue
		}
		b, err := json.Marshal(f.v)
		if err != nil {
			return fmt.Sprintf("its %s could not be read: %v", f.what, err)
		}
		if n := len(b); n > o.MaxSchemaBytes {
			return fmt.Sprintf("its %s is %d bytes; the limit is %s (--mcp-max-schema-bytes)", f.what, n, sizeWords(int64(o.MaxSchemaBytes)))
		}
		if string(b) != "null" {
			*f.dst = b
		}
	}
	return ""
}

// size is about the bytes a kept tool holds, counted against what a tool
// list may hold (--mcp-max-response-bytes).
func (t Tool) size() int64 {
	return int64(len(t.Name) + len(t.Description) + len(t.InputSchema) + len(t.Title) +
		len(t.Annotations) + len(t.OutputSchema) + len(t.Meta))
}
