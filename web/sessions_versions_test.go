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

	// Each agent's versions are offered as Version.list on that agent would
	// allow them: a grant on everything or on the agent, unlimited or with a
	// unit of its limit spent (once a view); a grant on a tenant covers no
	// agent; one bounded to an input value never allows a list (it names
	// none); a spend ceiling does not bound a list. (Beside an unlimited grant
	// on billing, a grant on everything limited to 1 a day showed every
	// agent's versions on every view, no unit spent.)
	if s := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, nil); s != 201 {
		t.Fatalf("Tenant.create: %d", s)
	}
	on := func(agent string, limit ...any) map[string]any {
		g := map[string]any{"verb": "Version.list"}
		if agent != "" {
			g["scope"] = "agent:" + agents[agent]
		}
		for i := 0; i+1 < len(limit); i += 2 {
			g[limit[i].(string)] = limit[i+1]
		}
		return g
	}
	both := []string{"archive · version 2", "archive · version 1", "billing · version 2", "billing · version 1"}
	billingOnly := []string{"billing · version 2", "billing · version 1"}
	oneADay := []any{"limit_count", 1, "limit_period", "day"}
	inX := []any{"limit_field", "grant", "limit_values", []string{"x"}}
	for i, c := range []struct {
		perms []map[string]any
		views [][]string // what each view in turn offers
	}{
		{[]map[string]any{on("billing"), on("", oneADay...)}, [][]string{both, billingOnly, billingOnly}},
		{[]map[string]any{on("billing"), on("", inX...)}, [][]string{billingOnly, billingOnly}},
		{[]map[string]any{on("billing", "limit_count", 5, "limit_period", "day"), on("", inX...)}, [][]string{billingOnly, billingOnly}},
		{[]map[string]any{on("billing", "limit_count", 5, "limit_period", "day"), on("archive", "limit_count", 5, "limit_period", "day")}, [][]string{both, both}},
		{[]map[string]any{on("billing"), on("archive")}, [][]string{both, both}},
		{[]map[string]any{{"verb": "Version.list", "scope": "tenant:acme"}, on("", oneADay...)}, [][]string{both, nil}},
		{[]map[string]any{on("billing"), on("", "limit_spend_sc", 5)}, [][]string{both, both}},
		// A limit on everything is spent first, and then the agent's alone.
		// (Allowed by a limited grant, the call itself spends whichever
		// comes first among the role's: that order is not the test's.)
	} {
		name := fmt.Sprintf("Limited starter %d", i)
		if s := e.api(tok, "POST", "/roles", map[string]any{"name": name, "permissions": append([]map[string]any{
			{"verb": "Session.create"}, {"verb": "Session.list"}, {"verb": "Vault.list"}}, c.perms...)}, nil); s != 201 {
			t.Fatalf("Role.create %s: %d", name, s)
		}
		email := fmt.Sprintf("limited%d@example.com", i)
		b := e.person(owner, email, "none")
		if s := e.api(tok, "POST", "/seats", map[string]any{"user": email, "role": name}, nil); s != 201 {
			t.Fatalf("Seat.create: %d", s)
		}
		for view, want := range c.views {
			resp, page := b.get("/sessions")
			if resp.StatusCode != 200 {
				t.Fatalf("%s's Sessions page, view %d: %d", name, view, resp.StatusCode)
			}
			if got := versionChoices(page); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s (%v), view %d: %q, want %q", name, c.perms, view, got, want)
			}
			if want == nil && strings.Contains(page, `data-testid="no-published"`) {
				t.Errorf("%s, view %d: nothing may be listed, and the form says no version is published", name, view)
			}
		}
	}
	// Held in this order (two seats), a limit on billing and then one on
	// everything, beside a tenant's grant that allows the call and covers no
	// agent: the limit on everything is spent first, then billing's alone.
	for i, perms := range [][]map[string]any{
		{{"verb": "Session.create"}, {"verb": "Session.list"}, {"verb": "Vault.list"}, {"verb": "Version.list", "scope": "tenant:acme"}, on("billing", oneADay...)},
		{on("", oneADay...)},
	} {
		if s := e.api(tok, "POST", "/roles", map[string]any{"name": fmt.Sprintf("Ordered %d", i), "permissions": perms}, nil); s != 201 {
			t.Fatalf("Role.create: %d", s)
		}
	}
	ordered := e.person(owner, "ordered@example.com", "none")
	for i := range 2 {
		if s := e.api(tok, "POST", "/seats", map[string]any{"user": "ordered@example.com", "role": fmt.Sprintf("Ordered %d", i)}, nil); s != 201 {
			t.Fatalf("Seat.create: %d", s)
		}
		time.Sleep(10 * time.Millisecond) // the seats' order
	}
	for view, want := range [][]string{both, billingOnly, nil} {
		if _, page := ordered.get("/sessions"); strings.Join(versionChoices(page), "|") != strings.Join(want, "|") {
			t.Errorf("two seats, view %d: %q, want %q", view, versionChoices(page), want)
		}
	}

	// A member's preset on everything offers every version: a redundant
	// grant of their seat is not marked used by it, and still decays.
	if s := e.api(tok, "POST", "/roles", map[string]any{"name": "Redundant", "permissions": []map[string]any{on("billing")}}, nil); s != 201 {
		t.Fatalf("Role.create: %d", s)
	}
	member := e.person(owner, "member@example.com", "member")
	if s := e.api(tok, "POST", "/seats", map[string]any{"user": "member@example.com", "role": "Redundant"}, nil); s != 201 {
		t.Fatalf("Seat.create: %d", s)
	}
	if _, page := member.get("/sessions"); strings.Join(versionChoices(page), "|") != strings.Join(both, "|") {
		t.Errorf("the member's versions: %q", versionChoices(page))
	}
	var stamped int64
	e.rt.DB().Table("seat_permissions AS sp").Joins("JOIN seats s ON s.id = sp.seat_id").Joins("JOIN users u ON u.id = s.user_id").
		Where("u.email = ? AND sp.last_used_at IS NOT NULL", "member@example.com").Count(&stamped)
	if stamped != 0 {
		t.Errorf("the member's redundant seat grant was marked used by the form (%d)", stamped)
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
