package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/verbs"
)

// TestRegistryNamesMatchTheServedInterfaces: calling every verb of the
// registry on its canonical route records an Action of the verb's very name
// (here each refused: the token holds only Skill.list, and the 403 names the
// verb's permission), with the client "subako do" and the model the CLI's
// headers gave; the console's calls record "console", another client "API
// (<User-Agent>)"; a model name over 200 bytes is refused naming the header;
// and the owner's $.d.ts declares every verb the owner holds by its name.
func TestRegistryNamesMatchTheServedInterfaces(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token() // made on the Tokens page: a console Action
	var narrow struct{ Token string }
	if st := e.api(tok, "POST", "/tokens", map[string]any{"name": "one", "expires": "1h", "permissions": []string{"Skill.list"}}, &narrow); st != 201 {
		t.Fatalf("Token.create: %d", st)
	}
	call := func(token, method, path, ua, model string) (int, []byte) {
		t.Helper()
		var body io.Reader
		if method != http.MethodGet && method != http.MethodDelete {
			body = strings.NewReader("{}")
		}
		req, _ := http.NewRequest(method, e.srv.URL+"/api/v1"+path, body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", ua)
		if model != "" {
			req.Header.Set("X-Subako-Model", model)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, v := range verbs.All() {
		path := v.Path
		for _, p := range verbs.PathParams(v.Path) {
			x := "x"
			if p == "port" {
				x = "8080"
			}
			path = strings.Replace(strings.Replace(path, ":"+p, x, 1), "*", x, 1)
		}
		token := narrow.Token
		if v.Name == "Skill.list" {
			token = tok
		}
		st, b := call(token, v.Method, path, "subako-cli/test", "model-for-"+v.Name)
		if v.Name == "Skill.list" {
			continue
		}
		var p problem
		_ = json.Unmarshal(b, &p)
		if st != http.StatusForbidden || !strings.HasPrefix(p.MissingPermission, v.Permission) {
			t.Errorf("%s %s with a token of Skill.list alone: %d %s (want 403 naming %s)", v.Method, path, st, b, v.Permission)
		}
	}
	st, b := call(tok, "GET", "/agents", "curl/8.5.0", "")
	if st != 200 {
		t.Fatalf("Agent.list: %d %s", st, b)
	}
	st, b = call(tok, "GET", "/agents", "curl/8.5.0", strings.Repeat("m", 201))
	var p problem
	_ = json.Unmarshal(b, &p)
	if st != 422 || p.Field != "X-Subako-Model" || !strings.Contains(p.Detail, "200 bytes") {
		t.Errorf("a model name of 201 bytes: %d %s (want 422 naming X-Subako-Model and its limit)", st, b)
	}

	var acts []struct {
		Verb    string `json:"verb"`
		Verdict string `json:"verdict"`
		Model   string `json:"model"`
		Client  string `json:"client_info"`
	}
	if st := e.api(tok, "GET", "/actions?limit=500", nil, &acts); st != 200 {
		t.Fatalf("Action.list: %d", st)
	}
	recorded := map[string]bool{}
	clients := map[string]bool{}
	for _, a := range acts {
		if a.Model == "model-for-"+a.Verb && a.Client == "subako do" {
			recorded[a.Verb] = true
		}
		clients[a.Verb+" by "+a.Client] = true
	}
	for _, v := range verbs.All() {
		if !recorded[v.Name] {
			t.Errorf("%s: no Action of that name with the client subako do and the call's model", v.Name)
		}
	}
	if !clients["Agent.list by API (curl/8.5.0)"] {
		t.Errorf("Agent.list by curl: no Action with the client API (curl/8.5.0): %v", clients)
	}
	if !clients["Token.create by console"] {
		t.Errorf("the Tokens page's Token.create: no Action with the client console")
	}

	// The typed client names each verb the owner holds as the registry does.
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/$.d.ts", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dts, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		t.Log("no $.d.ts served yet: its names are not checked")
		return
	}
	for _, v := range verbs.All() {
		if v.Name == "Client.connect" || v.Name == "ClientCall.next" {
			continue // a session token's own verbs: no person holds them
		}
		if !strings.Contains(string(dts), "  "+v.Noun()+": {") || !strings.Contains(string(dts), " "+v.Short()+"(") {
			t.Errorf("$.d.ts does not declare $.%s.%s", v.Noun(), v.Short())
		}
	}
}
