package web_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/models"
)

// fakeGitHub plays the parts of the GitHub REST API the github package reads
// and, like GitHub, answers 401 to a request without the expected token.
func fakeGitHub(t *testing.T, token string) *httptest.Server {
	t.Helper()
	issue := func(n int, title string, pr bool) map[string]any {
		is := map[string]any{"number": n, "title": title, "state": "open", "user": map[string]any{"login": "octocat"},
			"labels": []any{map[string]any{"name": "bug"}}, "body": "Body of " + title}
		if pr {
			is["pull_request"] = map[string]any{"url": "x"}
			is["head"], is["base"] = map[string]any{"ref": "feature"}, map[string]any{"ref": "main"}
		}
		return is
	}
	routes := map[string]any{
		"/repos/octo/hello": map[string]any{"full_name": "octo/hello", "description": "A test repository",
			"default_branch": "main", "language": "Go", "stargazers_count": 42},
		"/repos/octo/hello/issues":   []any{issue(1, "First bug", false), issue(2, "A pull request", true)},
		"/repos/octo/hello/issues/1": issue(1, "First bug", false),
		"/repos/octo/hello/pulls":    []any{issue(2, "A pull request", true)},
		"/repos/octo/hello/contents/README.md": map[string]any{"type": "file", "path": "README.md", "sha": "abc",
			"size": 13, "encoding": "base64", "content": "SGVsbG8sIHdvcmxkIQ==\n"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Bad credentials"}`))
			return
		}
		body, ok := routes[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"Not Found"}`))
			return
		}
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const ordersPage = `<!doctype html><html lang="en"><head><title>Orders</title></head>
<body><h1>Orders</h1><p>Find an order by number.</p><a href="/orders/17">Order 17</a></body></html>`

// fnWorld is a server with the four shipped packages installed and granted
// in a published version, a fake GitHub and a page server on 127.0.0.1, a
// vault holding the GitHub token, and two sessions: with the vault and without.
type fnWorld struct {
	*fnEnv
	token, ghURL, pageURL   string
	version, vault, agent   string
	withVault, withoutVault session
}

func newFnWorld(t *testing.T) *fnWorld {
	t.Helper()
	f := newFnEnv(t)
	w := &fnWorld{fnEnv: f, token: "ghp_" + rand.Text()}
	w.ghURL = fakeGitHub(t, w.token).URL
	pages := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		rw.Write([]byte(ordersPage))
	}))
	t.Cleanup(pages.Close)
	w.pageURL = pages.URL
	for _, name := range []string{"jq", "html", "javascript", "github"} {
		f.install(name)
	}
	var v struct{ ID string }
	if st := f.api(f.owner, "POST", "/vaults", map[string]any{"name": "octo"}, &v); st != 201 {
		t.Fatalf("Vault.create: %d", st)
	}
	w.vault = v.ID
	if st := f.api(f.owner, "PUT", "/vaults/"+v.ID+"/credentials", map[string]any{"prefix": w.ghURL, "type": "bearer", "secret": w.token}, nil); st != 200 {
		t.Fatalf("Credential.set: %d", st)
	}
	var draft version
	w.agent, draft = f.agentWithDraft(f.owner)
	config := fmt.Sprintf(`{"functions": [
	  {"name": "jq", "package": "jq", "version": "1.0.0", "default_policy": "allow"},
	  {"name": "page", "package": "html", "version": "1.0.0", "origins": [%q], "default_policy": "allow"},
	  {"name": "js", "package": "javascript", "version": "1.0.0", "default_policy": "allow"},
	  {"name": "gh", "package": "github", "version": "1.0.0", "origins": [%q], "default_policy": "allow"}]}`, w.pageURL, w.ghURL)
	if st, body := f.rawAPI(f.owner, "PUT", "/versions/"+draft.ID+"/config", config); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := f.api(f.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	w.version = draft.ID
	w.withVault, w.withoutVault = w.session(w.vault), w.session()
	return w
}

func (w *fnWorld) session(vaults ...string) session {
	w.t.Helper()
	var s session
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": vaults, "title": "fn"}, &s); st != 201 {
		w.t.Fatalf("Session.create: %d", st)
	}
	return s
}

// fnCase is one call of a shipped package's tool and what it must answer.
type fnCase struct {
	name, tool string
	input      map[string]any
	ok         bool     // succeeded, or failed with a tool error
	says       []string // substrings of the output, or of the error
}

func (w *fnWorld) cases() []fnCase {
	gh := func(extra map[string]any) map[string]any {
		in := map[string]any{"owner": "octo", "repo": "hello", "api_url": w.ghURL}
		for k, v := range extra {
			in[k] = v
		}
		return in
	}
	return []fnCase{
		{"jq filter", "fn__jq__query", map[string]any{"filter": "[.items[] | select(.price > 10) | .name]",
			"input": map[string]any{"items": []any{map[string]any{"name": "a", "price": 5}, map[string]any{"name": "b", "price": 12}}}},
			true, []string{`"results":[["b"]]`}},
		{"jq bad filter", "fn__jq__query", map[string]any{"filter": ".items["}, false, []string{"fn: jq@1.0.0 query", "filter: unexpected EOF"}},
		{"html inline", "fn__page__parse", map[string]any{"html": ordersPage}, true, []string{`"title":"Orders"`, "Find an order by number."}},
		{"html from a granted origin", "fn__page__parse", map[string]any{"url": w.pageURL + "/orders"}, true,
			[]string{`"href":"` + w.pageURL + `/orders/17"`}},
		{"html from an origin not granted", "fn__page__parse", map[string]any{"url": w.ghURL + "/"}, false, []string{"is not granted"}},
		{"javascript", "fn__js__run", map[string]any{"code": "console.log('hi', 1 + 1); [1, 2, 3].map(x => x * 2)"}, true,
			[]string{`"result":[2,4,6]`, `"hi 2"`}},
		{"javascript throws", "fn__js__run", map[string]any{"code": `throw new TypeError("nope")`}, false, []string{"TypeError: nope"}},
		{"github get_repo", "fn__gh__get_repo", gh(nil), true, []string{`"full_name":"octo/hello"`, `"stargazers_count":42`}},
		{"github list_issues", "fn__gh__list_issues", gh(map[string]any{"state": "all"}), true, []string{`"title":"First bug"`}},
		{"github get_issue", "fn__gh__get_issue", gh(map[string]any{"number": 1}), true, []string{`"body":"Body of First bug"`}},
		{"github list_pulls", "fn__gh__list_pulls", gh(nil), true, []string{`"head":{"ref":"feature"}`}},
		{"github get_file", "fn__gh__get_file", gh(map[string]any{"path": "README.md"}), true, []string{`"content":"Hello, world!"`}},
	}
}

func TestShippedPackagesThroughToolCalls(t *testing.T) {
	w := newFnWorld(t)
	s := w.withVault
	var ran []string
	for _, c := range w.cases() {
		t.Run(c.name, func(t *testing.T) {
			st, got := w.call(s.Token, s.ID, c.tool, c.input, 60)
			want, text := "succeeded", string(got.Output)
			if !c.ok {
				want, text = "failed", got.Error
			}
			if st != 200 || got.Status != want {
				t.Fatalf("%d %s: output %s error %q", st, got.Status, got.Output, got.Error)
			}
			for _, w := range c.says {
				if !strings.Contains(text, w) {
					t.Errorf("%s lacks %s", text, w)
				}
			}
			ran = append(ran, got.ID)
		})
	}
	// Without the vault's credential GitHub refuses the package's request.
	if st, got := w.call(w.withoutVault.Token, w.withoutVault.ID, "fn__gh__get_repo", map[string]any{"owner": "octo", "repo": "hello",
		"api_url": w.ghURL}, 60); st != 200 || got.Status != "failed" || !strings.Contains(got.Error, "HTTP 401: Bad credentials") {
		t.Fatalf("github without the vault: %d %+v", st, got)
	}
	w.checkUsage(ran, s.ID)
	w.checkTokenNowhere(s.ID, w.withoutVault.ID)
}

// checkUsage finds one function_seconds record per call, priced at 0.01 SC
// a second, for the session and its agent.
func (w *fnWorld) checkUsage(calls []string, sessionID string) {
	w.t.Helper()
	for _, id := range calls {
		var recs []models.UsageRecord
		w.rt.DB().Where("subject = ?", id).Find(&recs)
		if len(recs) != 1 {
			w.t.Errorf("call %s has %d usage records, want 1", id, len(recs))
			continue
		}
		u := recs[0]
		if u.Kind != "function_seconds" || u.Unit != "second" || u.SessionID != sessionID || u.AgentID != w.agent ||
			u.Quantity <= 0 || u.Quantity > 60 || math.Abs(u.Credits-u.Quantity*0.01) > 1e-9 {
			w.t.Errorf("usage of call %s: %+v", id, u)
		}
	}
}

// checkTokenNowhere looks for the vault's token in everything the server
// shows or keeps about the calls: the calls' records, the audit log, every
// console page about the session, version, vault and functions, and the log.
func (w *fnWorld) checkTokenNowhere(sessions ...string) {
	w.t.Helper()
	var seen []string
	look := func(what, text string) {
		seen = append(seen, what)
		if strings.Contains(text, w.token) {
			w.t.Errorf("the vault's token appears in %s", what)
		}
	}
	for _, s := range sessions {
		_, body := w.rawAPI(w.owner, "GET", "/sessions/"+s+"/tool_calls", "")
		if !strings.Contains(string(body), "octo/hello") && s == sessions[0] {
			w.t.Errorf("ToolCall.list of %s does not show the calls' output: %s", s, body)
		}
		look("ToolCall.list "+s, string(body))
	}
	_, actions := w.rawAPI(w.owner, "GET", "/actions?limit=500", "")
	look("Action.list", string(actions))
	var rows []models.Action
	w.rt.DB().Find(&rows)
	look("the actions table", fmt.Sprintf("%+v", rows))
	var calls []models.ToolCall
	w.rt.DB().Find(&calls)
	look("the tool_calls table", fmt.Sprintf("%+v", calls))
	paths := []string{"/versions/" + w.version, "/functions", "/functions/github/1.0.0", "/audit", "/usage", "/vaults", "/vaults/" + w.vault}
	for _, s := range sessions {
		paths = append(paths, "/sessions", "/sessions/"+s)
	}
	for _, p := range paths {
		resp, page := w.browser.get(p)
		if resp.StatusCode == 200 {
			look("the console page "+p, page)
		} else if p == "/versions/"+w.version || strings.HasPrefix(p, "/functions") {
			w.t.Errorf("console page %s answered %d", p, resp.StatusCode)
		}
	}
	logs := w.logs.String()
	if !strings.Contains(logs, "/sessions/:session/tool_calls") {
		w.t.Errorf("the captured log lacks the tool call requests; is it capturing? %d bytes", len(logs))
	}
	look("the server's log", logs)
	w.t.Logf("looked for the token in: %s", strings.Join(seen, ", "))
}
