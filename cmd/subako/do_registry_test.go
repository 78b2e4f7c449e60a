package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/verbs"
)

// `subako do` knows every verb of the registry by its name: its usage lists
// each with its route and doc line, and each verb's request goes to the
// verb's canonical route, with User-Agent subako-cli/… (recorded as the
// client "subako do").
func TestSubakoDoCallsEveryVerbByItsName(t *testing.T) {
	err := doCmd(nil, strings.NewReader(""), &bytes.Buffer{})
	if err == nil {
		t.Fatal("subako do without a verb: no usage")
	}
	for _, v := range verbs.All() {
		if !strings.Contains(err.Error(), v.Name+" ") || !strings.Contains(err.Error(), v.Doc) {
			t.Errorf("the usage does not list %s with its doc %q", v.Name, v.Doc)
		}
	}

	var got []string
	var agents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path)
		agents = append(agents, r.Header.Get("User-Agent"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	t.Setenv("SUBAKO_URL", srv.URL)
	t.Setenv("SUBAKO_TOKEN", "sbk_test")
	for _, v := range verbs.All() {
		in := map[string]string{}
		want := v.Path
		for _, p := range verbs.PathParams(v.Path) {
			in[p] = "x"
		}
		want = strings.ReplaceAll(want, "*", "x")
		for _, p := range verbs.PathParams(v.Path) {
			want = strings.ReplaceAll(want, ":"+p, "x")
		}
		args := []string{v.Name, "--json", jsonOf(in)}
		switch v.Body {
		case verbs.BodyRaw:
			args = append(args, "--body-file", "do_registry_test.go")
		case verbs.BodyWhole:
			in["body"] = "{}"
			args = []string{v.Name, "--json", strings.Replace(jsonOf(in), `"body":"{}"`, `"body":{}`, 1)}
		}
		got = nil
		if err := doCmd(args, strings.NewReader(""), &bytes.Buffer{}); err != nil {
			t.Errorf("subako do %s: %v", v.Name, err)
			continue
		}
		if len(got) != 1 || got[0] != v.Method+" /api/v1"+want {
			t.Errorf("subako do %s sent %v, want %s /api/v1%s", v.Name, got, v.Method, want)
		}
	}
	for _, a := range agents {
		if !strings.HasPrefix(a, "subako-cli/") {
			t.Fatalf("User-Agent %q, want subako-cli/…", a)
		}
	}
}

func jsonOf(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, `"`+k+`":"`+v+`"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
