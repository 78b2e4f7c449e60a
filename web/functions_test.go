package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/fntest"
	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/web"
)

// fnEnv is a whole server with a function engine, as `subako serve` wires
// it, with every log line it writes (debug included) captured.
type fnEnv struct {
	*env
	mods    fntest.Modules
	engine  *fn.Engine
	logs    *logtest.Buffer
	browser *client // the owner's
	owner   string  // the owner's API token
}

func newFnEnv(t *testing.T) *fnEnv {
	t.Helper()
	mods := fntest.Build(t)
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(log)
	t.Cleanup(func() { slog.SetDefault(prev) })
	// The fake APIs the functions fetch from listen on 127.0.0.1.
	eng, err := fn.New(context.Background(), fn.Config{DataDir: mods.DataDir, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	clk := &clock{now: time.Now().UTC()}
	rt := runtime.New(modelstest.Open(t), runtime.Options{Clock: clk, Log: log, AllowPrivateEgress: true})
	rt.SetFunctionEngine(eng)
	t.Cleanup(rt.Close)
	e := &env{t: t, rt: rt, clock: clk}
	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	handler = web.New(rt, web.Config{BaseURL: e.srv.URL, CookieHashKey: key, CookieBlockKey: key, Log: log})
	t.Cleanup(e.srv.Close)
	f := &fnEnv{env: e, mods: mods, engine: eng, logs: logs, browser: e.owner()}
	f.owner = f.browser.token()
	return f
}

// fnView is Function.get's answer, as far as the tests read it.
type fnView struct {
	ID, Name, Version, SHA256 string
	Tools                     []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	WasmSize  int `json:"wasm_size"`
	CompileMS int `json:"compile_ms"`
}

func installJSON(wasm, manifest []byte) map[string]any {
	return map[string]any{"manifest": json.RawMessage(manifest), "wasm_base64": base64.StdEncoding.EncodeToString(wasm)}
}

// install installs a shipped package through the JSON API.
func (f *fnEnv) install(name string) fnView {
	f.t.Helper()
	wasm, manifest := f.mods.Package(f.t, name)
	var v fnView
	if st := f.api(f.owner, "POST", "/functions", installJSON(wasm, manifest), &v); st != 201 {
		f.t.Fatalf("Function.install %s: %d %+v", name, st, v)
	}
	return v
}

// multipartForm encodes files and fields as a multipart/form-data body.
func multipartForm(files map[string][]byte, fields map[string]string) (*bytes.Buffer, string) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	for k, b := range files {
		part, _ := w.CreateFormFile(k, k+".bin")
		_, _ = part.Write(b)
	}
	_ = w.Close()
	return &body, w.FormDataContentType()
}

// postMultipart sends a form as the owner's browser (cookie) or, with a
// token, as an API client; it returns the status, Location and body.
func (f *fnEnv) postMultipart(path, token string, files map[string][]byte, fields map[string]string) (int, string, string) {
	f.t.Helper()
	body, ctype := multipartForm(files, fields)
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, body)
	req.Header.Set("Content-Type", ctype)
	hc := f.browser.http
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
		hc = http.DefaultClient
	} else {
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := hc.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// emptyModule is a valid WebAssembly module with nothing in it: no _start.
var emptyModule = []byte("\x00asm\x01\x00\x00\x00")

func TestFunctionInstallThroughTheAPI(t *testing.T) {
	f := newFnEnv(t)
	jqWasm, _ := f.mods.Package(t, "jq")
	jq := f.install("jq")
	if jq.Name != "jq" || jq.Version != "1.0.0" || jq.WasmSize != len(jqWasm) || len(jq.Tools) != 1 ||
		jq.Tools[0].Name != "query" || !strings.Contains(string(jq.Tools[0].InputSchema), `"filter"`) {
		t.Fatalf("installed jq: %+v", jq)
	}
	// Multipart works too, with the files named wasm and manifest.
	htmlWasm, htmlManifest := f.mods.Package(t, "html")
	if st, _, body := f.postMultipart("/api/v1/functions", f.owner, map[string][]byte{"wasm": htmlWasm, "manifest": htmlManifest}, nil); st != 201 {
		t.Fatalf("multipart Function.install: %d %s", st, body)
	}
	var got fnView
	if st := f.api(f.owner, "GET", "/functions/jq/1.0.0", nil, &got); st != 200 || got.SHA256 != jq.SHA256 || len(got.Tools) != 1 {
		t.Fatalf("Function.get: %d %+v", st, got)
	}
	if st := f.api(f.owner, "GET", "/functions/jq/9.9.9", nil, nil); st != 404 {
		t.Fatalf("Function.get of a version not installed: %d", st)
	}
	// A viewer may read packages, not install them.
	viewer := f.person(f.browser, "viewer@example.com", "viewer").token()
	var p problem
	if st := f.api(viewer, "POST", "/functions", installJSON(htmlWasm, htmlManifest), &p); st != 403 || p.MissingPermission != "Function.install" {
		t.Fatalf("viewer installing: %d %+v", st, p)
	}
	if st := f.api(viewer, "GET", "/functions/jq/1.0.0", nil, nil); st != 200 {
		t.Fatalf("viewer reading: %d", st)
	}
}

// badPackage is an install that must be refused, and the answer it must get.
type badPackage struct {
	name       string
	body       map[string]any
	status     int
	field      string
	code, says string
}

func badPackages(t *testing.T, mods fntest.Modules) []badPackage {
	jqWasm, jqManifest := mods.Package(t, "jq")
	counterWasm, _ := mods.TestModule(t, "counter")
	with := func(manifest string) []byte { return []byte(manifest) }
	tool := `"tools": [{"name": "count", "description": "Count", "input_schema": {"type": "object"}}]`
	return []badPackage{
		{"duplicate version", installJSON(jqWasm, jqManifest), 409, "manifest.version", "version_exists", "already installed"},
		{"not WebAssembly", installJSON([]byte("#!/bin/sh\necho hi\n"), with(`{"name": "sh", "version": "1.0.0", `+tool+`}`)),
			422, "wasm_base64", "invalid_wasm", "not a WebAssembly module"},
		{"no _start", installJSON(emptyModule, with(`{"name": "nostart", "version": "1.0.0", `+tool+`}`)),
			422, "wasm_base64", "invalid_wasm", "_start"},
		{"manifest names another package", map[string]any{"name": "counter", "manifest": json.RawMessage(jqManifest),
			"wasm_base64": base64.StdEncoding.EncodeToString(counterWasm)}, 422, "name", "manifest_mismatch", `the manifest names "jq"`},
		{"manifest of another version", map[string]any{"version": "2.0.0", "manifest": json.RawMessage(`{"name": "counter", "version": "1.0.0", ` + tool + `}`),
			"wasm_base64": base64.StdEncoding.EncodeToString(counterWasm)}, 422, "version", "manifest_mismatch", `"2.0.0" was requested`},
		{"memory below the module's own", installJSON(jqWasm, with(`{"name": "jq", "version": "3.0.0", `+tool+`, "limits": {"memory_mb": 2}}`)),
			422, "manifest.limits.memory_mb", "invalid_manifest", "needs 4 MiB at start"},
		{"bad tool name", installJSON(counterWasm, with(`{"name": "counter", "version": "1.0.0", "tools": [{"name": "Count It", "description": "x", "input_schema": {"type": "object"}}]}`)),
			422, "manifest.tools[0].name", "invalid_manifest", "a-z, 0-9, _ and -"},
		{"timeout over the server's cap", installJSON(counterWasm, with(`{"name": "counter", "version": "1.0.0", `+tool+`, "limits": {"timeout_ms": 3600000}}`)),
			422, "manifest.limits.timeout_ms", "invalid_manifest", "the server's cap"},
		{"unknown manifest field", installJSON(counterWasm, with(`{"name": "counter", "version": "1.0.0", "author": "me", `+tool+`}`)),
			422, "manifest", "invalid_manifest", `unknown field "author"`},
		{"bad base64", map[string]any{"manifest": json.RawMessage(jqManifest), "wasm_base64": "not base64!"},
			422, "wasm_base64", "invalid_base64", "not valid base64"},
		{"nothing", map[string]any{}, 422, "wasm", "wasm_required", "module is required"},
	}
}

func TestBadPackagesAreRefusedAndLeaveNothing(t *testing.T) {
	f := newFnEnv(t)
	f.install("jq")
	f.install("html")
	for _, c := range badPackages(t, f.mods) {
		t.Run(c.name, func(t *testing.T) {
			var p problem
			st := f.api(f.owner, "POST", "/functions", c.body, &p)
			if st != c.status || p.Field != c.field || p.Code != c.code || !strings.Contains(p.Detail, c.says) {
				t.Fatalf("%d %+v; want %d field %q code %q saying %q", st, p, c.status, c.field, c.code, c.says)
			}
		})
	}
	// Nothing half-written: two packages listed, two modules stored, and no
	// refused package left loaded in the engine.
	var list []fnView
	f.api(f.owner, "GET", "/functions", nil, &list)
	var modules int64
	f.rt.DB().Model(&models.FunctionModule{}).Count(&modules)
	if len(list) != 2 || list[0].Name != "html" || list[1].Name != "jq" || modules != 2 {
		t.Fatalf("after the refusals: %d packages %+v, %d modules", len(list), list, modules)
	}
	for _, key := range [][2]string{{"nostart", "1.0.0"}, {"jq", "3.0.0"}, {"counter", "1.0.0"}, {"sh", "1.0.0"}} {
		if _, ok := f.engine.Get(key[0], key[1]); ok {
			t.Errorf("%s@%s was refused but stays loaded", key[0], key[1])
		}
	}
	// A store that fails after the module compiled leaves no row and nothing loaded.
	if err := f.rt.DB().Exec("DROP TABLE function_modules").Error; err != nil {
		t.Fatal(err)
	}
	counterWasm, counterManifest := f.mods.TestModule(t, "counter")
	if st := f.api(f.owner, "POST", "/functions", installJSON(counterWasm, counterManifest), nil); st != 500 {
		t.Fatalf("install with a failing store: %d", st)
	}
	var n int64
	f.rt.DB().Model(&models.FunctionPackage{}).Where("name = ?", "counter").Count(&n)
	if _, loaded := f.engine.Get("counter", "1.0.0"); n != 0 || loaded {
		t.Fatalf("after a failed store: %d rows, loaded %v", n, loaded)
	}
}

func TestFunctionInstallThroughTheConsole(t *testing.T) {
	f := newFnEnv(t)
	jqWasm, jqManifest := f.mods.Package(t, "jq")
	st, loc, body := f.postMultipart("/functions", "", map[string][]byte{"wasm": jqWasm, "manifest": jqManifest}, nil)
	if st != http.StatusSeeOther || loc != "/functions/jq/1.0.0" {
		t.Fatalf("console install: %d %q %s", st, loc, body)
	}
	_, page := f.browser.get(loc)
	for _, want := range []string{"Installed jq 1.0.0.", `data-testid="function-schema"`, "&#34;filter&#34;", "select(.price &gt; 10)", "10000 ms", "128 MiB"} {
		if !strings.Contains(page, want) {
			t.Errorf("jq's page lacks %q", want)
		}
	}
	_, page = f.browser.get("/functions")
	for _, want := range []string{`data-testid="function-row"`, ">jq<", "1.0.0", "<summary class=\"mono\">query</summary>", "&#34;filter&#34;", " MiB", " ms", "owner@example.com"} {
		if !strings.Contains(page, want) {
			t.Errorf("Functions page lacks %q", want)
		}
	}
	// A bad upload is answered on the form, under the file it is about.
	st, _, body = f.postMultipart("/functions", "", map[string][]byte{"wasm": []byte("MZ not wasm"), "manifest": jqManifest}, nil)
	if st != 409 || !strings.Contains(body, `data-testid="function-manifest-error"`) || !strings.Contains(body, "already installed") {
		t.Fatalf("duplicate through the console: %d", st)
	}
	_, counterManifest := f.mods.TestModule(t, "counter")
	st, _, body = f.postMultipart("/functions", "", map[string][]byte{"wasm": []byte("MZ not wasm"), "manifest": counterManifest}, nil)
	if st != 422 || !strings.Contains(body, `data-testid="function-wasm-error"`) || !strings.Contains(body, "not a WebAssembly module") {
		t.Fatalf("not wasm through the console: %d %s", st, body)
	}
}

func TestFunctionGrantsAreChecked(t *testing.T) {
	f := newFnEnv(t)
	f.install("jq")
	_, draft := f.agentWithDraft(f.owner)
	grant := func(pkg, version, origins string) string {
		return `{"functions": [{"name": "j", "package": "` + pkg + `", "version": "` + version + `", "origins": ` + origins + `, "default_policy": "allow"}]}`
	}
	cases := []struct {
		name, config, field, code string
	}{
		{"unknown package", grant("jqx", "1.0.0", `[]`), "functions[0].package", "unknown_function"},
		{"version not installed", grant("jq", "1.0.1", `[]`), "functions[0].package", "unknown_function"},
		{"origin with a path", grant("jq", "1.0.0", `["https://api.github.com/repos"]`), "functions[0].origins[0]", "invalid_origin"},
		{"origin not http", grant("jq", "1.0.0", `["ftp://files.example.com"]`), "functions[0].origins[0]", "invalid_origin"},
		{"origin with a password", grant("jq", "1.0.0", `["https://me:hunter2@api.github.com"]`), "functions[0].origins[0]", "credential_in_config"},
		{"origin twice", grant("jq", "1.0.0", `["https://a.example", "https://a.example"]`), "functions[0].origins[1]", "origin_duplicate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, body := f.rawAPI(f.owner, "PUT", "/versions/"+draft.ID+"/config", c.config)
			var p problem
			_ = json.Unmarshal(body, &p)
			if st != 422 || p.Field != c.field || p.Code != c.code {
				t.Fatalf("%d %s; want 422 %s %s", st, body, c.field, c.code)
			}
		})
	}
	if st, body := f.rawAPI(f.owner, "PUT", "/versions/"+draft.ID+"/config", grant("jq", "1.0.0", `["https://api.github.com"]`)); st != 200 {
		t.Fatalf("a good grant: %d %s", st, body)
	}
	var ts []struct{ Name, Policy string }
	if f.api(f.owner, "GET", "/versions/"+draft.ID+"/tools", nil, &ts); len(ts) != 1 || ts[0].Name != "fn__j__query" || ts[0].Policy != "allow" {
		t.Fatalf("Version.tools: %+v", ts)
	}
}
