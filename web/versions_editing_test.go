package web_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var versionLocation = regexp.MustCompile(`/versions/(ver_[a-z0-9]+)$`)

// The console's New version continues from the agent's latest version (its
// config copied), not from an empty draft; with no version yet it is empty.
// A published version offers Start session, with itself preselected.
func TestNewVersionStartsFromTheLatestAndPublishedOffersStartSession(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	agent, first := e.agentWithDraft(tok)
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+first.ID+"/config", seedSandbox); s != 200 {
		t.Fatalf("Version.update: %d %s", s, body)
	}
	if s, body := e.rawAPI(tok, "POST", "/versions/"+first.ID+"/publish", ""); s != 200 {
		t.Fatalf("Version.publish: %d %s", s, body)
	}
	newVersion := func(agent string) version {
		t.Helper()
		page := mustGet(owner, "/agents/"+agent)
		if !strings.Contains(page, `<input type="hidden" name="from" value="latest">`) {
			t.Fatalf("New version does not start from the latest version:\n%s", page)
		}
		resp, _ := owner.post("/agents/"+agent+"/versions", url.Values{"from": {"latest"}})
		m := versionLocation.FindStringSubmatch(resp.Header.Get("Location"))
		if m == nil {
			t.Fatalf("New version answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		var v version
		e.api(tok, "GET", "/versions/"+m[1], nil, &v)
		return v
	}
	draft := newVersion(agent)
	if draft.Number != 2 || draft.State != "draft" || !sameJSON(t, draft.Config, []byte(seedSandbox)) {
		t.Fatalf("New version made version %d with %s, want version 1's config", draft.Number, draft.Config)
	}
	if strings.Contains(mustGet(owner, "/versions/"+draft.ID), `data-testid="start-session"`) {
		t.Fatal("a draft offers Start session")
	}
	var other struct{ ID string }
	e.api(tok, "POST", "/agents", map[string]any{"name": "empty"}, &other)
	if v := newVersion(other.ID); v.Number != 1 || !sameJSON(t, v.Config, []byte(`{}`)) {
		t.Fatalf("the first version of an agent is %s", v.Config)
	}

	page := mustGet(owner, "/versions/"+first.ID)
	if !strings.Contains(page, `href="/sessions?version=`+first.ID+`" data-testid="start-session"`) {
		t.Fatalf("the published version offers no Start session:\n%s", page)
	}
	if strings.Contains(mustGet(owner, "/agents/"+agent), "start-session") {
		t.Fatal("Start session offered off a version page")
	}
	form := mustGet(owner, "/sessions?version="+first.ID)
	if !strings.Contains(form, `<option value="`+first.ID+`" selected>`) {
		t.Fatalf("the session form does not preselect the version:\n%s", form)
	}
}
