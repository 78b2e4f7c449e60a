package main

import (
	"context"
	"log/slog"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	htmlrender "github.com/subako/subako/runtime/fn/packages/html-render"
	"github.com/subako/subako/runtime/fn/packages/python"
)

// wireNative sets up the native engine (packages that run a host command
// in a fresh bubblewrap sandbox per call) and installs its shipped
// packages. Without bwrap they are still installed, so grants stay valid,
// and their calls fail saying why.
func wireNative(ctx context.Context, rt *runtime.Runtime, e *fn.Engine, log *slog.Logger) {
	cfg := fn.NativeConfig{} // the sandboxes' uid and gid: 65534, as the sandbox driver's
	e.SetNative(cfg)
	e.CleanNative() // what a server that died left, past any live call's age
	if err := fn.NativeAvailable(ctx, cfg); err != nil {
		log.Warn("native function packages (python, html-render) cannot run on this machine: their calls fail", "err", err)
	}
	for _, pkg := range []struct {
		name             string
		manifest, bundle []byte
	}{
		{"python", python.Manifest(), python.Bundle()},
		{"html-render", htmlrender.Manifest(), htmlrender.Bundle()},
	} {
		v, installed, err := rt.EnsureFunction(ctx, runtime.FunctionInstallInput{Manifest: pkg.manifest, Wasm: pkg.bundle})
		switch {
		case err != nil:
			log.Error("shipped function package not installed", "package", pkg.name, "err", err)
		case installed:
			log.Info("shipped function package installed", "package", v.Name+"@"+v.Version, "engine", fn.EngineNative)
		}
	}
}
