package web_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
)

var versionOption = regexp.MustCompile(`<option value="(ver_[^"]+)"[^>]*>([^<]+)</option>`)

// versionChoices is the New session form's version options: "id label".
func versionChoices(page string) []string {
	at := strings.Index(page, `data-testid="session-version"`)
	if at < 0 {
		return nil
	}
	form := page[at:]
	form = form[:strings.Index(form, "</select>")]
	var out []string
	for _, m := range versionOption.FindAllStringSubmatch(form, -1) {
		out = append(out, m[2])
	}
	return out
}

// The New session form offers every published version the person may list
// versions of, by agent name and newest first, read at once: the Sessions
// page records one Version.list, not one per agent (it did, with an
// Agent.list, and a person holding Version.list on one agent got an error
// page, the other agents' Version.list being refused).
func TestNewSessionFormReadsPublishedVersionsAtOnce(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	agents := map[string]string{}
	versions := map[string][]string{} // an agent's versions, the oldest first
	for _, name := range []string{"billing", "archive", "drafts-only"} {
		var a struct{ ID string }
		if s := e.api(tok, "POST", "/agents", map[string]any{"name": name}, &a); s != 201 {
			t.Fatalf("Agent.create %s: %d", name, s)
		}
		agents[name] = a.ID
		for i := range 3 {
			var v struct{ ID string }
			if s := e.api(tok, "POST", "/agents/"+a.ID+"/versions", map[string]any{"config": map[string]any{}}, &v); s != 201 {
				t.Fatalf("Version.create: %d", s)
			}
			versions[name] = append(versions[name], v.ID)
			if name != "drafts-only" && i < 2 {
				if s := e.api(tok, "POST", "/versions/"+v.ID+"/publish", nil, nil); s != 200 {
					t.Fatalf("Version.publish: %d", s)
				}
			}
		}
	}
	versionLists := func() (n int64) {
		e.rt.DB().Model(&models.Action{}).Where("verb = ?", "Version.list").Count(&n)
		return n
	}
	before := versionLists()
	_, page := owner.get("/sessions")
	want := []string{"archive · version 2", "archive · version 1", "billing · version 2", "billing · version 1"}
	if got := versionChoices(page); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the owner's versions: %q, want %q", got, want)
	}
	if n := versionLists() - before; n != 1 {
		t.Errorf("the Sessions page recorded %d Version.list, want 1", n)
	}

	// A person who may list one agent's versions picks among those.
	if s := e.api(tok, "POST", "/roles", map[string]any{"name": "Billing starter", "permissions": []map[string]any{
		{"verb": "Session.create"}, {"verb": "Session.list"}, {"verb": "Vault.list"},
		{"verb": "Version.list", "scope": "agent:" + agents["billing"]}}}, nil); s != 201 {
		t.Fatalf("Role.create: %d", s)
	}
	starter := e.person(owner, "starter@example.com", "none")
	if s := e.api(tok, "POST", "/seats", map[string]any{"user": "starter@example.com", "role": "Billing starter"}, nil); s != 201 {
		t.Fatalf("Seat.create: %d", s)
	}
	resp, page := starter.get("/sessions")
	if resp.StatusCode != 200 {
		t.Fatalf("the starter's Sessions page: %d", resp.StatusCode)
	}
	if got, want := versionChoices(page), []string{"billing · version 2", "billing · version 1"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the starter's versions: %q, want %q", got, want)
	}

	// A Start session link keeps its version only where the form offers it:
	// not another agent's for the starter, not a draft for anyone.
	if _, page := starter.get("/sessions?version=" + versions["archive"][0]); strings.Contains(page, versions["archive"][0]) {
		t.Error("the starter's form offers another agent's version through ?version=")
	}
	if _, page := owner.get("/sessions?version=" + versions["billing"][2]); strings.Contains(page, `<option value="`+versions["billing"][2]) {
		t.Error("the form offers a draft through ?version=")
	}

	// A grant on everything with a limit shows nothing more beside an
	// unlimited grant on one agent (it showed every agent's versions, no unit
	// spent), nor, beside a limited one on one agent, when limited to some
	// input values (a list names none); a spent limit leaves the sessions
	// list, without the form.
	billing := map[string]any{"verb": "Version.list", "scope": "agent:" + agents["billing"]}
	billingLimited := map[string]any{"verb": "Version.list", "scope": "agent:" + agents["billing"], "limit_count": 5, "limit_period": "day"}
	for i, perms := range [][]map[string]any{
		{billing, {"verb": "Version.list", "limit_count": 1, "limit_period": "day"}},
		{billing, {"verb": "Version.list", "limit_field": "grant", "limit_values": []string{"x"}}},
		{billingLimited, {"verb": "Version.list", "limit_field": "grant", "limit_values": []string{"x"}}},
	} {
		name := fmt.Sprintf("Limited starter %d", i)
		if s := e.api(tok, "POST", "/roles", map[string]any{"name": name, "permissions": append([]map[string]any{
			{"verb": "Session.create"}, {"verb": "Session.list"}, {"verb": "Vault.list"}}, perms...)}, nil); s != 201 {
			t.Fatalf("Role.create %s: %d", name, s)
		}
		email := fmt.Sprintf("limited%d@example.com", i)
		b := e.person(owner, email, "none")
		if s := e.api(tok, "POST", "/seats", map[string]any{"user": email, "role": name}, nil); s != 201 {
			t.Fatalf("Seat.create: %d", s)
		}
		for view := range 3 {
			resp, page := b.get("/sessions")
			if resp.StatusCode != 200 {
				t.Fatalf("%s's Sessions page, view %d: %d", name, view, resp.StatusCode)
			}
			if got, want := versionChoices(page), []string{"billing · version 2", "billing · version 1"}; strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s's versions, view %d: %q, want %q", name, view, got, want)
			}
		}
	}
	if s := e.api(tok, "POST", "/roles", map[string]any{"name": "Spent starter", "permissions": []map[string]any{
		{"verb": "Session.create"}, {"verb": "Session.list"}, {"verb": "Vault.list"},
		{"verb": "Version.list", "limit_count": 1, "limit_period": "day"}}}, nil); s != 201 {
		t.Fatalf("Role.create: %d", s)
	}
	spent := e.person(owner, "spent@example.com", "none")
	if s := e.api(tok, "POST", "/seats", map[string]any{"user": "spent@example.com", "role": "Spent starter"}, nil); s != 201 {
		t.Fatalf("Seat.create: %d", s)
	}
	if _, page := spent.get("/sessions"); len(versionChoices(page)) != 4 {
		t.Errorf("a limited grant alone, its first view: %q, want the 4 published versions", versionChoices(page))
	}
	if resp, page := spent.get("/sessions"); resp.StatusCode != 200 || strings.Contains(page, `data-testid="session-form"`) {
		t.Errorf("the limit spent: %d, the form shown: %v; want the list without the form", resp.StatusCode, strings.Contains(page, `data-testid="session-form"`))
	}

	// Past the bound the form says so, and a version's Start session link
	// still preselects its version.
	now := time.Now().UTC()
	var many []models.Version
	for i := range runtime.MaxPublishedChoices {
		many = append(many, models.Version{ID: fmt.Sprintf("ver_many%04d", i), AgentID: agents["drafts-only"], Number: 10 + i,
			State: runtime.StatePublished, Config: "{}", CreatedAt: now, UpdatedAt: now, PublishedAt: &now})
	}
	if err := e.rt.DB().CreateInBatches(many, 100).Error; err != nil {
		t.Fatal(err)
	}
	_, page = owner.get("/sessions?version=ver_many0000")
	got := versionChoices(page)
	if len(got) != runtime.MaxPublishedChoices+1 || got[0] != "drafts-only · version 10" {
		t.Errorf("past the bound: %d versions, the first %q; want %d, the linked version first", len(got), got[0], runtime.MaxPublishedChoices+1)
	}
	if !strings.Contains(page, `<option value="ver_many0000" selected>`) {
		t.Error("the linked version is not preselected")
	}
	if !strings.Contains(page, fmt.Sprintf("The first %d published versions, by agent name.", runtime.MaxPublishedChoices)) {
		t.Error("the form does not say its versions were cut")
	}
}
