package runtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// FunctionView is one installed function package version.
type FunctionView struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Description string          `json:"description"`
	Tools       []tools.ToolDef `json:"tools"`
	WasmSize    int64           `json:"wasm_size"`
	CompileMS   int64           `json:"compile_ms"`
	CreatedAt   time.Time       `json:"created_at"`
}

func functionView(fp models.FunctionPackage) FunctionView {
	v := FunctionView{ID: fp.ID, Name: fp.Name, Version: fp.Version, Description: fp.Description,
		WasmSize: fp.WasmSize, CompileMS: fp.CompileMS, CreatedAt: fp.CreatedAt}
	var m struct {
		Tools []tools.ToolDef `json:"tools"`
	}
	_ = json.Unmarshal([]byte(fp.Manifest), &m)
	v.Tools = m.Tools
	return v
}

// FunctionList is Function.list: installed packages, by name and version.
func (r *Runtime) FunctionList(ctx context.Context, p Principal) ([]FunctionView, error) {
	out := []FunctionView{}
	err := r.run(ctx, p, "Function.list", func(a *act) error {
		var fps []models.FunctionPackage
		if err := r.db.WithContext(ctx).Order("name, created_at").Find(&fps).Error; err != nil {
			return err
		}
		for _, fp := range fps {
			out = append(out, functionView(fp))
		}
		return nil
	})
	return out, err
}

// Releases lists the sandbox releases this server offers.
func (r *Runtime) Releases() []string { return append([]string(nil), r.opts.Releases...) }
