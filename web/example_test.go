package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
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

// TestDashboardShowsTheFourFigures: waiting approvals, active sessions,
// running sandboxes and today's spend, from a waiting call, two sessions, the
// example's sandbox after an exec and usage records of today and yesterday.
func TestDashboardShowsTheFourFigures(t *testing.T) {
	f := newFnEnv(t)
	jq := f.install("jq")
	bwrap := exec.Command("bwrap", "--version").Run() == nil
	if bwrap {
		startSandboxes(t, f.rt, sandboxDirs(t), local.Config{})
	}
	w := &world{env: f.env, owner: f.owner}
	if _, page := f.browser.get("/"); figure(page, "approvals") != "0" || figure(page, "sessions") != "0" ||
		figure(page, "sandboxes") != "0" || figure(page, "spend") != "0.00 SC" {
		t.Fatalf("an empty dashboard shows approvals %q, sessions %q, sandboxes %q, spend %q", figure(page, "approvals"),
			figure(page, "sessions"), figure(page, "sandboxes"), figure(page, "spend"))
	}
	resp, _ := f.browser.post("/example", url.Values{})
	_, page := f.browser.get(resp.Header.Get("Location"))
	ex := session{ID: strings.TrimPrefix(resp.Header.Get("Location"), "/sessions/"), Token: sessionTokenRe.FindString(page)}
	sandboxes := "0"
	if bwrap {
		w.exec(ex, "true")
		sandboxes = "1"
	}

	// A second agent asks before jq runs: its call waits for a decision.
	_, draft := f.agentWithDraft(f.owner)
	cfg := `{"functions": [{"name": "jq", "package": "jq", "version": "` + jq.Version + `", "default_policy": "ask"}]}`
	if st, body := f.rawAPI(f.owner, "PUT", "/versions/"+draft.ID+"/config", cfg); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := f.api(f.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	w.version = draft.ID
	asking := w.session()
	w.callAsync(asking.Token, asking.ID, "fn__jq__query", jqCall, 0)
	w.pending(f.owner, "", 1)

	// An hour of machine time today (100.00 SC) and a day's yesterday, which
	// today's spend leaves out.
	now := f.clock.Now()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for _, end := range []time.Time{now, midnight.Add(-time.Hour)} {
		u := runtime.Usage{Kind: runtime.UsageMachineSeconds, SessionID: ex.ID, Subject: "sbx_test", Quantity: 3600,
			Unit: "second", Credits: 100, Start: end.Add(-time.Hour), End: end}
		if end.Before(midnight) {
			u.Credits, u.Quantity = 2400, 86400
		}
		if err := f.rt.RecordUsage(t.Context(), u); err != nil {
			t.Fatal(err)
		}
	}
	var rep runtime.UsageReport
	if st := f.api(f.owner, "GET", "/usage?from="+midnight.Format("2006-01-02"), nil, &rep); st != 200 {
		t.Fatalf("Usage.get: %d", st)
	}
	spend := fmt.Sprintf("%.2f SC", rep.Credits)
	if rep.Credits < 100 || rep.Credits >= 101 {
		t.Fatalf("today's usage is %v SC; want 100 and the calls' few", rep.Credits)
	}

	_, page = f.browser.get("/")
	for name, want := range map[string]string{"approvals": "1", "sessions": "2", "sandboxes": sandboxes, "spend": spend} {
		if got := figure(page, name); got != want {
			t.Errorf("the dashboard's %s reads %q; want %q", name, got, want)
		}
	}
}

var figureRe = regexp.MustCompile(`data-testid="figure-([a-z]+)"><a [^>]*>([^<]*)</a>`)

// figure reads one of the dashboard's figures.
func figure(page, name string) string {
	for _, m := range figureRe.FindAllStringSubmatch(page, -1) {
		if m[1] == name {
			return m[2]
		}
	}
	return "(missing)"
}

// TestSignInBeforeSetupSaysWhereTheLinkIs: before anyone has an account the
// sign-in page says `subako serve` printed a setup link; after, it does not.
func TestSignInBeforeSetupSaysWhereTheLinkIs(t *testing.T) {
	e := newEnv(t)
	_, page := e.browser().get("/login")
	if !strings.Contains(page, `data-testid="setup-hint"`) || !strings.Contains(page, "subako serve") || !strings.Contains(page, "/setup/") {
		t.Fatalf("the sign-in page before setup does not say where the setup link is:\n%s", page)
	}
	e.owner()
	if _, page := e.browser().get("/login"); strings.Contains(page, `data-testid="setup-hint"`) {
		t.Error("the sign-in page still speaks of setup once the owner exists")
	}
}
