package web_test

import (
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox/local"
)

// TestExampleAgentLoadsAndItsToolsAnswer: on an empty database the owner's
// dashboard offers the example; one POST makes a published version and a
// session whose skill, function and (with bubblewrap) sandbox answer through
// the API; loading again creates nothing.
func TestExampleAgentLoadsAndItsToolsAnswer(t *testing.T) {
	f := newFnEnv(t)
	f.install("jq")
	bwrap := exec.Command("bwrap", "--version").Run() == nil
	if bwrap {
		startSandboxes(t, f.rt, sandboxDirs(t), local.Config{})
	}
	if _, page := f.browser.get("/"); !strings.Contains(page, "Load the example agent") {
		t.Fatalf("the empty dashboard does not offer the example:\n%s", page)
	}
	resp, _ := f.browser.post("/example", url.Values{})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/sessions/") {
		t.Fatalf("Load the example agent answered %d %q; want a redirect to its session", resp.StatusCode, resp.Header.Get("Location"))
	}
	where := resp.Header.Get("Location")
	_, page := f.browser.get(where)
	token := sessionTokenRe.FindString(page)
	if token == "" {
		t.Fatalf("the session page does not show the example session's token once:\n%s", page)
	}
	w := &world{env: f.env, owner: f.owner}
	id := strings.TrimPrefix(where, "/sessions/")
	offered := w.offered(token, id)
	for _, tool := range []string{"skill__notes__read", "fn__jq__query", "sandbox__workbench__exec", "builtin__ask_user__ask"} {
		if _, ok := offered[tool]; !ok {
			t.Errorf("the example session does not offer %s; it offers %v", tool, offered)
		}
	}
	if st, c := w.call(token, id, "skill__notes__read", map[string]any{"path": "SKILL.md"}, 5); st != 200 || c.Status != "succeeded" ||
		!strings.Contains(string(c.Output), "Example notes") {
		t.Errorf("the skill's read answered %d %+v", st, c)
	}
	if st, c := w.call(token, id, "fn__jq__query", jqCall, 10); st != 200 || c.Status != "succeeded" || !strings.Contains(string(c.Output), "dear") || strings.Contains(string(c.Output), "cheap") {
		t.Errorf("jq answered %d %+v", st, c)
	}
	if bwrap {
		out := w.exec(session{ID: id, Token: token}, "/skills/notes/bin/hello.sh")
		if out.Stdout != "hello from the example skill\n" {
			t.Errorf("the sandbox's exec answered %+v; want the skill's script's line", out)
		}
	}

	// Again, as a reload after the POST would: nothing new, same session.
	resp, _ = f.browser.post("/example", url.Values{})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != where {
		t.Fatalf("a second load answered %d %q; want the same session %s", resp.StatusCode, resp.Header.Get("Location"), where)
	}
	_, page = f.browser.get(where)
	if sessionTokenRe.MatchString(page) {
		t.Error("a second load showed a session token again")
	}
	for table, want := range map[any]int64{&models.Agent{}: 1, &models.Session{}: 1, &models.Version{}: 1, &models.Skill{}: 1} {
		var n int64
		f.rt.DB().Model(table).Count(&n)
		if n != want {
			t.Errorf("%T: %d after two loads; want %d", table, n, want)
		}
	}
	if _, page := f.browser.get("/"); strings.Contains(page, "Load the example agent") {
		t.Error("the dashboard still offers the example once an agent exists")
	}
}

var jqCall = map[string]any{"filter": ".items[] | select(.price > 10) | .name",
	"input": map[string]any{"items": []map[string]any{{"name": "cheap", "price": 5}, {"name": "dear", "price": 12}}}}
