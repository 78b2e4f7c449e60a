package web

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/verbs"
)

// notAPIVerbs are the names runtime.AllVerbs holds that are not verbs of the
// API, each with where it lives instead.
var notAPIVerbs = map[string]string{
	"Vault.use":        "a permission Session.create checks for each vault it binds",
	"User.grant_owner": "a permission User.invite, User.update and User.remove check to name an owner",
	"Resource.read":    "an MCP method of a session's endpoint (/mcp/sessions/{session})",
	"Prompt.get":       "an MCP method of a session's endpoint (/mcp/sessions/{session})",
	"Program.run":      "the do tool of /mcp (code mode), recorded with its program",
}

// TestEveryVerbOnEveryInterface: every verb of the registry has its handler,
// its canonical route and aliases on the router, and its name among the
// runtime's verbs (the permissions); every handler and every runtime verb is
// the registry's, or a named exception. `subako do` is checked in
// cmd/subako, the OpenAPI operationIds, the Actions and $.d.ts through the
// served API (TestRegistryNamesMatchTheServedInterfaces).
func TestEveryVerbOnEveryInterface(t *testing.T) {
	hs := apiHandlers(&handlers.Handlers{})
	for _, v := range verbs.All() {
		if hs[v.Name] == nil {
			t.Errorf("%s: no handler in apiHandlers", v.Name)
		}
	}
	for name := range hs {
		if _, ok := verbs.Get(name); !ok {
			t.Errorf("handler %s: no verb of that name in runtime/verbs", name)
		}
	}

	key := []byte("0123456789abcdef0123456789abcdef")
	rt := runtime.New(modelstest.Open(t), runtime.Options{Log: slog.New(slog.DiscardHandler)})
	e := New(rt, Config{BaseURL: "http://127.0.0.1", CookieHashKey: key, CookieBlockKey: key, Log: slog.New(slog.DiscardHandler)})
	served := map[string]bool{}
	for _, r := range e.Routes() {
		served[r.Method+" "+r.Path] = true
	}
	for _, v := range verbs.All() {
		for _, p := range append([]string{v.Path}, v.Aliases...) {
			if !served[v.Method+" /api/v1"+p] {
				t.Errorf("%s: %s /api/v1%s is not routed", v.Name, v.Method, p)
			}
		}
	}
	for key := range served {
		method, path, _ := strings.Cut(key, " ")
		rest, ok := strings.CutPrefix(path, "/api/v1/")
		if !ok || rest == "*" || path == "/api/v1/openapi.json" || strings.HasPrefix(rest, "$.") || strings.Contains(rest, "/$.") {
			continue // not a verb: the group's catch-all, the API's own descriptions
		}
		if !routedVerb(method, path) {
			t.Errorf("%s %s is routed under /api/v1 but no verb of the registry has it", method, path)
		}
	}

	all := runtime.AllVerbs()
	for _, v := range verbs.All() {
		if !slices.Contains(all, v.Name) {
			t.Errorf("%s: not among runtime.AllVerbs (no access level or session holds it)", v.Name)
		}
		if !slices.Contains(all, v.Permission) {
			t.Errorf("%s: its permission %s is not a verb runtime knows", v.Name, v.Permission)
		}
	}
	for _, name := range all {
		if _, ok := verbs.Get(name); !ok && notAPIVerbs[name] == "" {
			t.Errorf("runtime verb %s is in no interface: declare it in runtime/verbs or say where it lives in notAPIVerbs", name)
		}
	}
	for name, where := range notAPIVerbs {
		if _, ok := verbs.Get(name); ok {
			t.Errorf("%s is declared in the registry but listed as %s", name, where)
		}
	}
}

func routedVerb(method, path string) bool {
	for _, v := range verbs.All() {
		if v.Method == method && (path == "/api/v1"+v.Path || slices.ContainsFunc(v.Aliases, func(a string) bool { return path == "/api/v1"+a })) {
			return true
		}
	}
	return false
}
