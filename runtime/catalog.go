package runtime

import (
	"context"
	"encoding/json"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// DefaultReleases are the sandbox platform releases a server offers unless
// configured otherwise.
var DefaultReleases = []string{"2026"}

// catalog answers runtime/tools' questions about this installation from the database.
type catalog struct {
	ctx context.Context
	r   *Runtime
}

func (r *Runtime) catalog(ctx context.Context) tools.Catalog { return catalog{ctx: ctx, r: r} }

func (c catalog) HasSkill(name string) bool {
	var n int64
	c.r.db.WithContext(c.ctx).Model(&models.Skill{}).Where("name = ?", name).Count(&n)
	return n > 0
}

func (c catalog) Releases() []string { return c.r.opts.Releases }

func (c catalog) FunctionTools(pkg, version string) ([]tools.ToolDef, bool) {
	var fp models.FunctionPackage
	if err := c.r.db.WithContext(c.ctx).First(&fp, "name = ? AND version = ?", pkg, version).Error; err != nil {
		return nil, false
	}
	var m struct {
		Tools []tools.ToolDef `json:"tools"`
	}
	if err := json.Unmarshal([]byte(fp.Manifest), &m); err != nil {
		return nil, false
	}
	return m.Tools, true
}
