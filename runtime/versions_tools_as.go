package runtime

import (
	"context"
	"encoding/json"
)

// VersionSetToolsAs sets a draft's tools_as ("flat" or "code": how its
// sessions offer their tools over MCP), through Version.update, so the
// whole config is checked and the change recorded like any other edit.
func (r *Runtime) VersionSetToolsAs(ctx context.Context, p Principal, version, toolsAs string) (VersionView, error) {
	return r.updateConfig(ctx, p, version, func(current string) ([]byte, error) {
		whole := map[string]json.RawMessage{}
		_ = json.Unmarshal([]byte(current), &whole)
		b, err := json.Marshal(toolsAs)
		if err != nil {
			return nil, err
		}
		whole["tools_as"] = b
		return json.Marshal(whole)
	})
}
