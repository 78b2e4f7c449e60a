package runtime

import "context"

// What a person's API token offers at /mcp (tokens.tools, migration 0026).
const (
	// TokenToolsCode: search, fetch and do (code mode), the default.
	TokenToolsCode = "code"
	// TokenToolsFlat: one MCP tool per verb the token holds.
	TokenToolsFlat = "flat"
)

// TokenTools is what /mcp offers p: its API token's setting, code mode for
// anything else (a console session has no token).
func (r *Runtime) TokenTools(ctx context.Context, p Principal) string {
	if p.TokenID == "" {
		return TokenToolsCode
	}
	var tools string
	if err := r.db.WithContext(ctx).Table("tokens").Select("tools").Where("id = ?", p.TokenID).Scan(&tools).Error; err != nil {
		r.opts.Log.Warn("runtime: read token tools", "token", p.TokenID, "err", err)
		return TokenToolsCode
	}
	if tools == TokenToolsFlat {
		return TokenToolsFlat
	}
	return TokenToolsCode
}
