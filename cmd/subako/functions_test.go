package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/fntest"
	"github.com/subako/subako/web"
)

// start is one server start over db, as serve wires functions: a new engine,
// the stored packages loaded, the shipped ones installed if missing. It
// returns the runtime and what the start logged.
func start(t *testing.T, db *models.DB, mods fntest.Modules, shipped fstest.MapFS) (*runtime.Runtime, string) {
	t.Helper()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	e, err := fn.New(context.Background(), fn.Config{DataDir: mods.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	rt := runtime.New(db, runtime.Options{Log: log})
	t.Cleanup(func() { rt.Close(); _ = e.Close(context.Background()) })
	rt.SetFunctionEngine(e)
	if _, err := rt.LoadFunctions(t.Context()); err != nil {
		t.Fatal(err)
	}
	installShipped(t.Context(), rt, shipped, log)
	return rt, logs.String()
}

func TestShippedPackagesInstallOnFirstStartOnly(t *testing.T) {
	mods := fntest.Build(t)
	wasm, manifest := mods.Package(t, "jq")
	shipped := fstest.MapFS{"fnpackages/README.md": {Data: []byte("built here")},
		"fnpackages/jq.wasm": {Data: wasm}, "fnpackages/jq.manifest.json": {Data: manifest}}
	db := modelstest.Open(t)

	rt, logs := start(t, db, mods, shipped)
	if !strings.Contains(logs, "shipped function package installed") || !strings.Contains(logs, "package=jq@1.0.0") {
		t.Fatalf("first start logged:\n%s", logs)
	}
	list, err := rt.FunctionList(t.Context(), runtime.System)
	if err != nil || len(list) != 1 || list[0].Name != "jq" || list[0].CreatedBy != "subako" {
		t.Fatalf("after the first start: %+v %v", list, err)
	}

	// The next start finds jq installed and changes nothing.
	if _, logs = start(t, db, mods, shipped); strings.Contains(logs, "installed") {
		t.Fatalf("second start logged:\n%s", logs)
	}
	// Another build of the same version does not replace the installed one.
	other, _ := mods.TestModule(t, "counter")
	shipped["fnpackages/jq.wasm"] = &fstest.MapFile{Data: other}
	rt, logs = start(t, db, mods, shipped)
	if !strings.Contains(logs, "kept as installed") {
		t.Fatalf("a start with another build logged:\n%s", logs)
	}
	if got, _ := rt.FunctionGet(t.Context(), runtime.System, "jq", "1.0.0"); got.SHA256 != list[0].SHA256 {
		t.Fatalf("jq 1.0.0 changed from %s to %s", list[0].SHA256, got.SHA256)
	}

	// A binary built without the packages says so, and one missing a manifest names it.
	if _, logs = start(t, db, mods, fstest.MapFS{"fnpackages/README.md": {}}); !strings.Contains(logs, "embeds no shipped function packages") {
		t.Fatalf("a start without packages logged:\n%s", logs)
	}
	if _, logs = start(t, db, mods, fstest.MapFS{"fnpackages/x.wasm": {Data: wasm}}); !strings.Contains(logs, "shipped package x has no manifest") {
		t.Fatalf("a start with a package without manifest logged:\n%s", logs)
	}
}

func TestDoFunctionInstall(t *testing.T) {
	mods := fntest.Build(t)
	rt, _ := start(t, modelstest.Open(t), mods, fstest.MapFS{})
	key := []byte("0123456789abcdef0123456789abcdef")
	srv := httptest.NewServer(web.New(rt, web.Config{CookieHashKey: key, CookieBlockKey: key, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(srv.Close)
	if _, _, err := rt.UserCreate(t.Context(), runtime.System, "op@example.com", runtime.AccessMember, "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	p, _ := rt.PrincipalForEmail(t.Context(), "op@example.com")
	tok, err := rt.TokenCreate(t.Context(), p, runtime.TokenCreateInput{Name: "cli", Expires: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SUBAKO_URL", srv.URL)
	t.Setenv("SUBAKO_TOKEN", tok.Token)

	wasm, manifest := mods.Package(t, "jq")
	body := fmt.Sprintf(`{"manifest": %s, "wasm_base64": %q}`, manifest, base64.StdEncoding.EncodeToString(wasm))
	var out bytes.Buffer
	if err := doCmd([]string{"Function.install"}, strings.NewReader(body), &out); err != nil || !strings.Contains(out.String(), `"name": "jq"`) {
		t.Fatalf("do Function.install: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := doCmd([]string{"Function.get", "--json", `{"name": "jq", "version": "1.0.0"}`}, nil, &out); err != nil || !strings.Contains(out.String(), `"name": "query"`) {
		t.Fatalf("do Function.get: %v\n%s", err, out.String())
	}
	if err := doCmd([]string{"Function.install"}, strings.NewReader(body), io.Discard); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("installing jq 1.0.0 twice: %v", err)
	}
}
