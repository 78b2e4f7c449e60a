package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// FunctionView is one installed function package version.
type FunctionView struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Description string          `json:"description"`
	Engine      string          `json:"engine"` // "wasm" or "native" (a bubblewrap sandbox per call)
	Tools       []tools.ToolDef `json:"tools"`
	Limits      FunctionLimits  `json:"limits"`
	SHA256      string          `json:"sha256"`
	WasmSize    int64           `json:"wasm_size"`
	CompileMS   int64           `json:"compile_ms"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
}

// FunctionLimits are what the manifest asks for; zero means the server's default.
type FunctionLimits struct {
	TimeoutMS int `json:"timeout_ms"`
	MemoryMB  int `json:"memory_mb"`
}

func functionView(fp models.FunctionPackage) FunctionView {
	v := FunctionView{ID: fp.ID, Name: fp.Name, Version: fp.Version, Description: fp.Description, SHA256: fp.WasmSHA256,
		WasmSize: fp.WasmSize, CompileMS: fp.CompileMS, CreatedBy: fp.CreatedBy, CreatedAt: fp.CreatedAt}
	var m struct {
		Engine string          `json:"engine"`
		Tools  []tools.ToolDef `json:"tools"`
		Limits FunctionLimits  `json:"limits"`
	}
	_ = json.Unmarshal([]byte(fp.Manifest), &m)
	v.Tools, v.Limits, v.Engine = m.Tools, m.Limits, m.Engine
	if v.Engine == "" {
		v.Engine = "wasm"
	}
	if v.Tools == nil {
		v.Tools = []tools.ToolDef{}
	}
	return v
}

// FunctionList is Function.list: installed packages, by name and version.
func (r *Runtime) FunctionList(ctx context.Context, p Principal) ([]FunctionView, error) {
	out := []FunctionView{}
	err := r.run(ctx, p, "Function.list", func(a *act) error {
		var fps []models.FunctionPackage
		if err := r.db.WithContext(ctx).Order("name, created_at").Find(&fps).Error; err != nil {
			return fmt.Errorf("runtime: list function packages: %w", err)
		}
		for _, fp := range fps {
			out = append(out, functionView(fp))
		}
		return nil
	})
	return out, err
}

// FunctionGet is Function.get: one package version with its tools' schemas.
func (r *Runtime) FunctionGet(ctx context.Context, p Principal, name, version string) (FunctionView, error) {
	var out FunctionView
	err := r.run(ctx, p, "Function.get", func(a *act) error {
		fp, err := r.functionPackage(ctx, name, version)
		if err != nil {
			return err
		}
		a.target(fp.ID)
		out = functionView(fp)
		return nil
	}, name+"@"+version)
	return out, err
}

func (r *Runtime) functionPackage(ctx context.Context, name, version string) (models.FunctionPackage, error) {
	var fp models.FunctionPackage
	err := r.db.WithContext(ctx).First(&fp, "name = ? AND version = ?", name, version).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fp, notFound("function package", name+"@"+version)
	}
	if err != nil {
		return fp, fmt.Errorf("runtime: load function package %s@%s: %w", name, version, err)
	}
	return fp, nil
}

// Releases lists the sandbox releases this server offers.
func (r *Runtime) Releases() []string { return append([]string(nil), r.opts.Releases...) }
