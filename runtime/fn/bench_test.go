package fn

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tetratelabs/wazero"
)

// BenchmarkCall compares, per shipped package, a call through Engine.Call with
// the same compiled module instantiated and run by bare wazero (stdin, stdout,
// nothing else). The difference is the engine's own cost: input validation,
// limits, capped buffers and the per-call fetcher.
//
//	go test ./runtime/fn -run '^$' -bench BenchmarkCall -benchtime 100x
func BenchmarkCall(b *testing.B) {
	token := "bench-token"
	srv := fakeGitHub(b, token, "marker")
	creds := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
	cases := []struct {
		pkg, tool string
		input     any
	}{
		{"jq", "query", map[string]any{"filter": ".items[] | select(.price > 10) | .name",
			"input": map[string]any{"items": []any{map[string]any{"name": "a", "price": 12}}}}},
		{"html", "parse", map[string]any{"html": testPage}},
		{"javascript", "run", map[string]any{"code": "[1, 2, 3].map(x => x * 2)"}},
		{"github", "get_repo", map[string]any{"owner": "octo", "repo": "hello", "api_url": srv.URL}},
	}
	e := sharedEngine(b)
	for _, c := range cases {
		p := load(b, e, "packages", c.pkg)
		input, _ := json.Marshal(c.input)
		req := CallRequest{Tool: c.tool, Input: input, Origins: []string{srv.URL}, Credentials: creds}
		b.Run(c.pkg+"/engine", func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Call(context.Background(), p, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.pkg+"/bare", func(b *testing.B) {
			stdin, _ := json.Marshal(map[string]any{"tool": c.tool, "input": json.RawMessage(input)})
			origins, _ := parseOrigins(req.Origins)
			for b.Loop() {
				// The host import is there for every module that links it;
				// only github uses it here.
				f := &fetcher{origins: origins, credentials: creds, transport: e.transport, caps: e.caps}
				ctx := context.WithValue(context.Background(), fetcherKey{}, f)
				var out bytes.Buffer
				cfg := wazero.NewModuleConfig().WithName("").WithStdin(bytes.NewReader(stdin)).WithStdout(&out)
				if _, err := e.runtime.InstantiateModule(ctx, p.compiled, cfg); err != nil {
					b.Fatal(err)
				}
				if out.Len() == 0 {
					b.Fatal("no output")
				}
			}
		})
	}
}
