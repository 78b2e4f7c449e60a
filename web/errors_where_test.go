package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestFailedImportShowsErrorsAtTheTopLinkedToTheInput: a config that fails
// to import lists its errors at the top of the page, before anything else the
// page shows, each a link to the config's input, which is marked invalid.
func TestFailedImportShowsErrorsAtTheTopLinkedToTheInput(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	_, draft := e.agentWithDraft(owner.token())
	bad := `{"mcp_servers": [{"name": "Bad Name", "url": "ftp://x", "default_policy": "maybe"}]}`
	resp, page := owner.post("/versions/"+draft.ID+"/import", url.Values{"config": {bad}})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a bad import answered %d", resp.StatusCode)
	}
	top, form := strings.Index(page, `data-testid="import-errors"`), strings.Index(page, "Import agent config")
	if top < 0 || top > strings.Index(page, `<div class="card`) || top > form {
		t.Fatalf("the import errors are not at the top (errors at %d, first card at %d, import form at %d)", top, strings.Index(page, `<div class="card`), form)
	}
	links := regexp.MustCompile(`<li class="small"><a class="mono" href="#import-json">([^<]+)</a>`).FindAllStringSubmatch(page, -1)
	if len(links) < 2 {
		t.Fatalf("want each error linked to the input; found %d links:\n%s", len(links), page[top:min(len(page), top+2000)])
	}
	for _, l := range links {
		if !strings.HasPrefix(l[1], "mcp_servers[0]") {
			t.Errorf("an error does not name its field: %q", l[1])
		}
	}
	if !strings.Contains(page, `id="import-json" name="config" data-testid="import-json" aria-invalid="true" aria-describedby="import-errors"`) {
		t.Error("the config's input is not marked invalid and described by the errors")
	}
}

// TestFlashesReadAsSentences: refusals shown as flashes start with a
// capital and end with a full stop (they were the runtime's lowercase
// "no approval …" and "answer: type an answer …").
func TestFlashesReadAsSentences(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	owner.get("/approvals") // the welcome flash is shown and gone
	msgs := []string{decideInConsole(owner, "apr_nope", "approve", url.Values{})}
	owner.post("/sessions/ses_nope/calls/tc_nope/answer", url.Values{})
	_, page := owner.get("/approvals")
	for _, m := range flashText.FindAllStringSubmatch(page, -1) {
		msgs = append(msgs, m[1])
	}
	if len(msgs) != 2 {
		t.Fatalf("want two flashes; got %q", msgs)
	}
	for _, msg := range msgs {
		if msg == "" || strings.ToUpper(msg[:1]) != msg[:1] || !strings.HasSuffix(msg, ".") || strings.Contains(msg, " :") {
			t.Errorf("a flash does not read as a sentence: %q", msg)
		}
	}
}

// TestNotFoundAndForbiddenSayWhatAndWhereToGo: a missing page, a missing
// agent and a refused action say what happened in sentences and link back,
// as a whole page and as an htmx fragment.
func TestNotFoundAndForbiddenSayWhatAndWhereToGo(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	viewer := e.person(owner, "viewer@example.com", "viewer")
	for _, c := range []struct {
		name, path string
		by         *client
		htmx       bool
		status     int
		want       []string
	}{
		{"unknown route", "/nowhere", owner, false, 404, []string{"Page not found", "There is nothing at /nowhere.", `href="/"`}},
		{"unknown agent", "/agents/agt_nope", owner, false, 404, []string{"Page not found", "It may have been deleted", `href="/agents">Back to Agents`, `href="/">Go to the dashboard`}},
		{"unknown agent, htmx", "/agents/agt_nope", owner, true, 404, []string{"Page not found.", `href="/agents">Back to Agents`}},
		{"refused", "/agents", viewer, false, 403, []string{"Permission denied", "Agent.create", "People page", `href="/">Go to the dashboard`}},
	} {
		method := "GET"
		if c.status == 403 {
			method = "POST"
		}
		hdr := map[string]string{}
		if c.htmx {
			hdr["HX-Request"] = "true"
		}
		resp, page := c.by.do(method, c.path, url.Values{"name": {"nope"}}, hdr)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d; want %d", c.name, resp.StatusCode, c.status)
		}
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: the page lacks %q:\n%.3000s", c.name, w, page)
			}
		}
	}
}
