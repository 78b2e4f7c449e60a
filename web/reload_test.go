package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/subako/subako/models"
)

// submit posts a form the way a browser does: a 303 is followed with a GET,
// and the page that GET answers is returned. A POST answered with a page
// directly is returned as it is.
func (c *client) submit(path string, form url.Values) (*http.Response, string) {
	c.e.t.Helper()
	resp, page := c.post(path, form)
	if resp.StatusCode != http.StatusSeeOther {
		return resp, page
	}
	return c.get(resp.Header.Get("Location"))
}

// A browser's reload after a form post re-sends the GET the 303 led to; only
// a POST answered with a page would be sent again. Each creating form must
// therefore redirect, and reloading the page it leads to creates nothing. The
// secret a form makes (a session's token, an invitation link, an API token)
// shows on that page once: never in its URL, never on the reload.
func TestReloadAfterCreatingPostCreatesNothing(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	db := w.rt.DB()
	count := func(model any) int64 {
		var n int64
		if err := db.Model(model).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A tool call the operator tries without htmx needs a session to call in.
	var s struct{ ID string }
	w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": []string{w.vault}, "title": "try"}, &s)
	cases := []struct {
		name   string
		path   string
		form   url.Values
		model  any
		secret *regexp.Regexp // shown once on the page after, if the form makes one
	}{
		{"start session", "/sessions", url.Values{"version": {w.version}, "vaults": {w.vault}, "title": {"reload"}}, &models.Session{}, sessionTokenRe},
		{"invite", "/people/invite", url.Values{"email": {"new@example.com"}, "access": {"member"}}, &models.Invite{}, inviteLink},
		{"api token", "/tokens", url.Values{"name": {"ci"}, "expires": {"1h"}}, &models.Token{}, regexp.MustCompile(`sbk_[a-z0-9]+`)},
		{"agent", "/agents", url.Values{"name": {"second"}}, &models.Agent{}, nil},
		{"example agent", "/example", url.Values{}, &models.Session{}, sessionTokenRe},
		{"draft version", "/agents/" + w.agent + "/versions", url.Values{"from": {w.version}}, &models.Version{}, nil},
		{"vault", "/vaults", url.Values{"name": {"customer-b"}}, &models.Vault{}, nil},
		{"credential", "/vaults/" + w.vault + "/credentials", url.Values{"prefix": {"https://api.example.com/"}, "type": {"bearer"}, "secret": {"s3cret-value"}}, &models.Credential{}, nil},
		{"try a tool", "/sessions/" + s.ID + "/try", url.Values{"tool": {"mcp__everything__echo"}, "input": {`{"message": "hi"}`}}, &models.ToolCall{}, nil},
		{"notification channel", "/notifications/channels", url.Values{"name": {"ops"}, "kind": {"webhook"}, "format": {"json"}, "url": {"https://hooks.example.com/x"}}, &models.NotificationChannel{}, regexp.MustCompile(`whsec_[a-z0-9]+`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := count(c.model)
			resp, page := owner.post(c.path, c.form)
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("the form answered %d, not a redirect: a reload would post it again\n%s", resp.StatusCode, page)
			}
			to := resp.Header.Get("Location")
			if c.secret != nil && c.secret.MatchString(to) {
				t.Fatalf("the redirect carries the secret in its URL: %s", to)
			}
			_, first := owner.get(to)
			made := count(c.model)
			if made != before+1 {
				t.Fatalf("the form made %d rows, want 1", made-before)
			}
			if c.secret != nil && !c.secret.MatchString(first) {
				t.Fatalf("the page after the form does not show its secret once:\n%s", first)
			}
			// The reload.
			_, again := owner.get(to)
			if n := count(c.model); n != made {
				t.Fatalf("reloading %s made %d more rows", to, n-made)
			}
			if c.secret != nil {
				if secret := c.secret.FindString(first); strings.Contains(again, secret) {
					t.Fatalf("the reloaded page shows the secret again")
				}
			}
		})
	}
}

// The upload and grant forms redirect too: a skill uploaded and a grant added
// once, however often the page after is reloaded.
func TestReloadAfterUploadOrGrantCreatesNothing(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	var draft version
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	reload := func(what string, resp *http.Response, count func() int) {
		t.Helper()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s answered %d, not a redirect", what, resp.StatusCode)
		}
		made := count()
		for range 2 {
			owner.get(resp.Header.Get("Location"))
		}
		if n := count(); n != made || n != 1 {
			t.Fatalf("%s: %d after the form, %d after reloading, want 1", what, made, n)
		}
	}
	resp, _ := owner.uploadSkill("refunds", "", skillZip(t, skillEntry{name: "SKILL.md", body: "# Refunds"}))
	reload("the skill upload", resp, func() int { return w.skillCount(w.owner) })

	resp, _ = owner.post("/versions/"+draft.ID+"/grants/mcp", url.Values{"name": {"everything"}, "url": {w.mcpURL}, "default_policy": {"allow"}})
	reload("the grant form", resp, func() int {
		var v version
		w.api(w.owner, "GET", "/versions/"+draft.ID, nil, &v)
		return strings.Count(string(v.Config), `"name":"everything"`) + strings.Count(string(v.Config), `"name": "everything"`)
	})
}
