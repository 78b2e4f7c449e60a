package main

import (
	"context"
	"embed"
	"log/slog"
	"path/filepath"

	"github.com/subako/subako/runtime/codemode"
)

// codemodeGuest holds code mode's WebAssembly guest, built by `make packages`
// into codemodeguest/guest.wasm. A checkout where it was not built embeds
// only the folder's README.
//
//go:embed codemodeguest
var codemodeGuest embed.FS

// wireCodeMode gives code mode its guest, with compiled code cached in the
// data folder, and compiles it in the background so the first `do` does not
// wait for it.
func wireCodeMode(dataDir string, log *slog.Logger) {
	wasm, err := codemodeGuest.ReadFile("codemodeguest/guest.wasm")
	if err != nil {
		log.Error("code mode's guest is not built into this binary: every do fails until it is built with make build")
		return
	}
	codemode.SetCacheDir(filepath.Join(dataDir, "codemodecache"))
	codemode.SetGuest(wasm)
	go func() {
		if err := codemode.Warm(context.Background()); err != nil {
			log.Error("code mode's guest did not compile: every do fails", "err", err)
		}
	}()
}
