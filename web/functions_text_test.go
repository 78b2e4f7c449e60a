package web_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A manifest uploaded as a file (the console's form, or the API's
// multipart install) reaches no body check: a NUL in its description was a
// 500 on PostgreSQL (and the install's Action said only "failed"), stored
// as is on SQLite, and broken UTF-8 was mended into U+FFFD without a word.
// Both are a 422 naming the field, on both databases, and nothing is
// installed.
func TestFunctionInstallMultipartRefusesBrokenText(t *testing.T) {
	f := newFnEnv(t)
	wasm, manifest := f.mods.Package(t, "jq")
	for _, tt := range []struct {
		name, field, want string
		edit              func(m map[string]any) []byte
	}{
		{"NUL in the description", "manifest.description", "NUL", func(m map[string]any) []byte {
			m["description"] = "a\x00b"
			b, _ := json.Marshal(m)
			return b
		}},
		{"NUL in a tool's description", "manifest.tools[0].description", "NUL", func(m map[string]any) []byte {
			m["tools"].([]any)[0].(map[string]any)["description"] = "x\x00"
			b, _ := json.Marshal(m)
			return b
		}},
		{"broken UTF-8", "manifest", "not valid UTF-8", func(m map[string]any) []byte {
			m["description"] = "BROKEN"
			b, _ := json.Marshal(m)
			return bytes.Replace(b, []byte("BROKEN"), []byte("a\xffb"), 1)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(manifest, &m); err != nil {
				t.Fatal(err)
			}
			st, _, body := f.postMultipart("/api/v1/functions", f.owner, map[string][]byte{"wasm": wasm, "manifest": tt.edit(m)}, nil)
			var p problem
			_ = json.Unmarshal([]byte(body), &p)
			if st != 422 || p.Field != tt.field || !strings.Contains(p.Detail, tt.want) {
				t.Fatalf("Function.install answered %d %s; want 422 naming %s (%s)", st, body, tt.field, tt.want)
			}
		})
	}
	var list []fnView
	if st := f.api(f.owner, "GET", "/functions", nil, &list); st != 200 || len(list) != 0 {
		t.Fatalf("Function.list: %d %+v; want nothing installed", st, list)
	}
}
