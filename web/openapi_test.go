package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/verbs"
)

// TestOpenAPIDocumentIsValid: GET /api/v1/openapi.json (no token needed)
// is a valid OpenAPI 3.1 document by @seriousme/openapi-schema-validator
// (web/testdata/openapi, `make deps`), and it names every verb: an operation
// at its canonical route with operationId the verb's name and summary its
// doc line, its aliases as deprecated operations.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Get(e.srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc struct {
		OpenAPI string                                 `json:"openapi"`
		Paths   map[string]map[string]openAPIOperation `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi: %q", doc.OpenAPI)
	}
	ids := map[string]int{}
	for _, ops := range doc.Paths {
		for _, op := range ops {
			if op.OperationID != "" {
				ids[op.OperationID]++
			}
		}
	}
	for _, v := range verbs.All() {
		op, ok := doc.Paths[openAPIPath(v.Path)][strings.ToLower(v.Method)]
		if !ok || op.OperationID != v.Name || op.Summary != v.Doc || ids[v.Name] != 1 {
			t.Errorf("%s: operation at %s %s is %+v (operationIds of that name: %d)", v.Name, v.Method, openAPIPath(v.Path), op, ids[v.Name])
		}
		for _, a := range v.Aliases {
			if op, ok := doc.Paths[openAPIPath(a)][strings.ToLower(v.Method)]; !ok || !op.Deprecated {
				t.Errorf("%s: alias %s %s is not a deprecated operation: %+v", v.Name, v.Method, a, op)
			}
		}
	}
	if len(ids) != len(verbs.All()) {
		t.Errorf("%d operationIds for %d verbs", len(ids), len(verbs.All()))
	}

	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the validator cannot run")
	}
	dir, _ := filepath.Abs("testdata/openapi")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@seriousme", "openapi-schema-validator")); err != nil {
		t.Fatal("the OpenAPI validator is not installed: make deps (npm ci --prefix web/testdata/openapi)")
	}
	file := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, filepath.Join(dir, "validate.mjs"), file).CombinedOutput()
	var res struct {
		Valid   bool            `json:"valid"`
		Version string          `json:"version"`
		Errors  json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(out, &res) != nil || err != nil || !res.Valid || res.Version != "3.1" {
		t.Fatalf("openapi.json is not valid OpenAPI 3.1 (%v):\n%.3000s", err, out)
	}
}

type openAPIOperation struct {
	OperationID string `json:"operationId"`
	Summary     string `json:"summary"`
	Deprecated  bool   `json:"deprecated"`
}

func openAPIPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "*" {
			segs[i] = "{path}"
		} else if strings.HasPrefix(s, ":") {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}
