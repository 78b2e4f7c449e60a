package runtime

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/fn"
)

// SetFunctionEngine gives the runtime its function engine, one per process,
// and makes it the executor of fn__ tools. Call LoadFunctions next, so the
// packages stored before a restart are ready before the first call.
func (r *Runtime) SetFunctionEngine(e *fn.Engine) {
	r.fnEngine.Store(e)
	r.SetFunctionRunner(r.runFunction)
}

func (r *Runtime) functionEngine() *fn.Engine { return r.fnEngine.Load() }

// FunctionLoad is what the function engine holds now, for metrics: running
// instances, the MiB of memory they reserved, and calls waiting for room.
// All zero on a server that runs no functions.
func (r *Runtime) FunctionLoad() (running, reservedMB, queued int) {
	if e := r.functionEngine(); e != nil {
		return e.InUse()
	}
	return 0, 0, 0
}

var errNoEngine = &Error{Kind: KindConflict, Code: "functions_unavailable", Title: "Functions unavailable",
	Detail: "this server runs no function engine, so it cannot install or run function packages"}

// LoadFunctions compiles every stored package into the engine (from the
// engine's disk cache when it has one) and returns how many are loaded. A
// package that fails to load is named in the error and skipped: its calls
// fail with that reason while the others run.
func (r *Runtime) LoadFunctions(ctx context.Context) (int, error) {
	e := r.functionEngine()
	if e == nil {
		return 0, errNoEngine
	}
	var fps []models.FunctionPackage
	if err := r.db.WithContext(ctx).Order("name, created_at").Find(&fps).Error; err != nil {
		return 0, fmt.Errorf("runtime: list function packages: %w", err)
	}
	var errs []error
	n := 0
	for _, fp := range fps {
		if _, err := r.loadFunction(ctx, e, fp); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// loadedFunction returns a package ready to call, loading it from the
// database when this process has not yet: another replica may have installed it.
func (r *Runtime) loadedFunction(ctx context.Context, e *fn.Engine, name, version string) (*fn.Package, error) {
	if p, ok := e.Get(name, version); ok {
		return p, nil
	}
	fp, err := r.functionPackage(ctx, name, version)
	if err != nil {
		return nil, err
	}
	return r.loadFunction(ctx, e, fp)
}

func (r *Runtime) loadFunction(ctx context.Context, e *fn.Engine, fp models.FunctionPackage) (*fn.Package, error) {
	var mod models.FunctionModule
	err := r.db.WithContext(ctx).First(&mod, "package_id = ?", fp.ID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("runtime: function package %s@%s has no stored module", fp.Name, fp.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: read module of %s@%s: %w", fp.Name, fp.Version, err)
	}
	m, err := fn.ParseManifest([]byte(fp.Manifest), e.Caps())
	if err != nil {
		return nil, fmt.Errorf("runtime: load %s@%s: stored manifest: %w", fp.Name, fp.Version, err)
	}
	p, err := e.Load(ctx, mod.Wasm, m)
	if err != nil {
		return nil, fmt.Errorf("runtime: load %s@%s: %w", fp.Name, fp.Version, err)
	}
	return p, nil
}
