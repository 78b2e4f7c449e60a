package web_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// noneWorld: an ask-first call pending on a session, and a person of access
// "none" seated in a role that approves that session's calls (and makes
// their own tokens), signed in, with a token.
type noneWorld struct {
	*world
	s      session
	person *client
	token  string
	seat   string
}

func newNoneWorld(t *testing.T) *noneWorld {
	t.Helper()
	w := newWorldWith(t, askConfig, runtime.Options{})
	nw := &noneWorld{world: w, s: w.session(w.vault)}
	owner := w.browserOf()
	nw.person = w.person(owner, "seated@example.com", "none")

	// Access none holds nothing: no approvals, no tokens of their own.
	if resp, page := nw.person.get("/approvals"); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "Approval.list") {
		t.Fatalf("an unseated none person's Approvals page: %d, want 403 naming Approval.list", resp.StatusCode)
	}
	if resp, _ := nw.person.get("/approvals/events"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an unseated none person's approvals stream: %d, want 403", resp.StatusCode)
	}

	var role runtime.RoleView
	if st := w.api(w.owner, "POST", "/roles", map[string]any{"name": "Approvers", "permissions": []map[string]any{
		{"verb": "Approval.list", "scope": "session:" + nw.s.ID},
		{"verb": "Approval.approve", "scope": "session:" + nw.s.ID},
		{"verb": "Token.create"}, {"verb": "Token.list"},
	}}, &role); st != 201 {
		t.Fatalf("Role.create: %d", st)
	}
	var seat runtime.SeatView
	if st := w.api(w.owner, "POST", "/seats", map[string]any{"user": "seated@example.com", "role": "Approvers"}, &seat); st != 201 {
		t.Fatalf("Seat.create: %d", st)
	}
	nw.seat = seat.ID
	nw.token = nw.person.token()
	w.callAsync(nw.s.Token, nw.s.ID, getEnv, map[string]any{}, 30)
	w.pending(nw.token, "", 1)
	return nw
}

// unseat deletes the seat as the owner.
func (nw *noneWorld) unseat() {
	nw.t.Helper()
	if st := nw.api(nw.owner, "DELETE", "/seats/"+nw.seat, nil, nil); st != 204 {
		nw.t.Fatalf("Seat.delete: %d", st)
	}
}

// refusedNow checks the person's next cookie request and next API token
// request are refused naming Approval.list.
func (nw *noneWorld) refusedNow() {
	nw.t.Helper()
	if resp, page := nw.person.get("/approvals"); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "Approval.list") {
		nw.t.Errorf("the unseated person's next page: %d, want 403 naming Approval.list", resp.StatusCode)
	}
	var p problem
	if st := nw.api(nw.token, "GET", "/approvals", nil, &p); st != 403 || p.Code != "permission_denied" || !strings.HasPrefix(p.MissingPermission, "Approval.list") {
		nw.t.Errorf("the unseated person's next API request: %d %+v, want 403 with missing_permission Approval.list", st, p)
	}
}

// A person of access "none" holds only what their seat's role holds: seated
// in a role approving one session's calls, their approvals queue streams and
// they approve through the API, each Action naming the role that allowed it;
// unseated, the open stream ends at once and their next cookie and token
// requests are refused with missing_permission.
func TestAccessNoneSeatedApproverUnseatedEndsTheStream(t *testing.T) {
	nw := newNoneWorld(t)
	queue := nw.person.events("/approvals/events")
	queue.untilData(t, `data-testid="approval-approve"`, "")
	badge := nw.person.events("/approvals/pending/events")
	badge.next(t)

	// Nothing beyond the role: not the agents, nor the vaults' contents, nor people.
	var p problem
	if st := nw.api(nw.token, "POST", "/agents", map[string]any{"name": "x"}, &p); st != 403 || p.MissingPermission != "Agent.create" {
		t.Errorf("Agent.create by a none person: %d %+v", st, p)
	}
	if st := nw.api(nw.token, "GET", "/vaults/"+nw.vault, nil, &p); st != 403 || !strings.HasPrefix(p.MissingPermission, "Vault.get") {
		t.Errorf("Vault.get by a none person: %d %+v", st, p)
	}

	// A token narrowed to the role's Approval.list: its Action names the
	// token and the role it comes through.
	var narrow struct{ Token string }
	if st := nw.api(nw.token, "POST", "/tokens", map[string]any{"name": "queue only", "expires": "1h",
		"permissions": []string{"Approval.list session:" + nw.s.ID}}, &narrow); st != 201 {
		t.Fatalf("Token.create narrowed: %d", st)
	}
	nw.pending(narrow.Token, "", 1)

	nw.unseat()
	queue.endsWithin(t, "approvals queue", 5*time.Second)
	badge.endsWithin(t, "pending badge", 5*time.Second)
	nw.refusedNow()

	// Every Action says why: the refusal names the missing permission, and
	// an allowed call the role that allowed it, with its scope.
	var acts []struct {
		Verb, Verdict     string
		Permission        string `json:"permission"`
		MissingPermission string `json:"missing_permission"`
	}
	if st := nw.api(nw.owner, "GET", "/actions?verb=Approval.list&by=seated@example.com", nil, &acts); st != 200 || len(acts) == 0 {
		t.Fatalf("Action.list: %d %+v", st, acts)
	}
	var allowed, refused, viaToken bool
	for _, a := range acts {
		if strings.HasPrefix(a.Permission, "Approval.list session:"+nw.s.ID+" (token ") && strings.HasSuffix(a.Permission, " via role Approvers)") {
			viaToken = true
		}
		if a.Permission == "Approval.list session:"+nw.s.ID+" (role Approvers)" {
			allowed = true
		}
		if strings.HasPrefix(a.MissingPermission, "Approval.list") {
			refused = true
		}
	}
	if !allowed || !refused || !viaToken {
		t.Errorf("the Actions of Approval.list do not say why (allowed by the role: %v, by the narrowed token through the role: %v, refused naming it: %v): %+v", allowed, viaToken, refused, acts)
	}
	// The Audit page says the same.
	_, audit := nw.browserOf().get("/audit?verb=Approval.list")
	if !strings.Contains(audit, "(role Approvers)") || !strings.Contains(audit, `data-testid="action-missing"`) {
		t.Errorf("the Audit page does not say why the none person's calls were allowed and refused")
	}
}

// The same in Chromium: the none person's Approvals page is open and live;
// unseating ends its stream, and the next page answers 403 naming the
// missing permission.
func TestBrowserAccessNoneUnseatedApprovalsPageEnds(t *testing.T) {
	nw := newNoneWorld(t)
	ctx := browserCtx(t)
	base := nw.srv.URL
	steps(t, ctx, "the seated none person's Approvals page streams", append(loginAs(t, ctx, base, "seated@example.com"),
		chromedp.Navigate(base+"/approvals"),
		watchDOM(`document.querySelector("[data-testid=approval-live]").getAttribute("data-live") === "open"`, 10*time.Second),
		chromedp.WaitVisible(css(`[data-testid=approval-approve]`)))...)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function(){
		var el = document.querySelector("[data-testid=approval-live]");
		window.__ended = false;
		// The server ending the stream, or refusing its reconnection.
		document.addEventListener("htmx:sseError", function(){ window.__ended = true; });
		document.addEventListener("htmx:sseClose", function(){ window.__ended = true; });
		return !!el;
	})()`)); err != nil {
		t.Fatal(err)
	}
	nw.unseat()
	steps(t, ctx, "the open stream ends at once", watchDOM(`window.__ended === true`, 5*time.Second))
	steps(t, ctx, "the next page is refused naming the permission",
		chromedp.Navigate(base+"/approvals"),
		chromedp.WaitVisible(css(`main`)))
	if s := text(t, ctx, `main`); !strings.Contains(s, "Approval.list") {
		t.Fatalf("the unseated person's Approvals page:\n%s", s)
	}
	nw.refusedNow()
}

// A person of access "none" with no seat opens every page of the console:
// each answers either the page or 403 naming the permission it lacks, never
// a server error; the People page offers "none" when inviting and changing
// access.
func TestAccessNoneConsoleRefusesByName(t *testing.T) {
	e := &env{t: t, clock: &clock{now: time.Now().UTC()}}
	e.serve(runtime.New(modelstest.Open(t), runtime.Options{Clock: e.clock, Log: quiet}))
	owner := e.owner()
	if _, page := owner.get("/people"); !strings.Contains(page, `value="none"`) {
		t.Fatalf("the People page offers no access none:\n%s", page)
	}
	nobody := e.person(owner, "nobody@example.com", "none")
	if resp, page := nobody.get("/"); resp.StatusCode != http.StatusOK || !strings.Contains(page, `data-testid="dashboard"`) {
		t.Fatalf("the dashboard of a none person: %d", resp.StatusCode)
	}
	for _, path := range []string{"/agents", "/skills", "/sessions", "/approvals", "/notifications", "/sandboxes", "/functions",
		"/vaults", "/usage", "/people", "/roles", "/changes", "/tenants", "/audit", "/tokens", "/approvals/events", "/approvals/pending/events"} {
		resp, page := getWithin(t, nobody, path, 10*time.Second)
		if resp == nil {
			continue
		}
		switch {
		case resp.StatusCode == http.StatusForbidden:
			if !regexp.MustCompile(`[A-Z][a-zA-Z]+\.[a-z_A-Z]+`).MatchString(page) {
				t.Errorf("%s: 403 without naming the permission:\n%s", path, page)
			}
		case resp.StatusCode == http.StatusOK:
		default:
			t.Errorf("%s answered %d to a none person", path, resp.StatusCode)
		}
	}
	// Through the API: access none is chosen by name, and a bad level names the choices.
	var p problem
	tok := owner.token()
	if st := e.api(tok, "PATCH", "/users/"+userIDOf(t, e, tok, "nobody@example.com"), map[string]any{"access": "nobody"}, &p); st != 422 || p.Field != "access" || !strings.Contains(p.Detail, "none") {
		t.Errorf("User.update to a bad level: %d %+v", st, p)
	}
}

// userIDOf finds a person's id through User.list.
func userIDOf(t *testing.T, e *env, token, email string) string {
	t.Helper()
	var users []struct{ ID, Email string }
	e.api(token, "GET", "/users", nil, &users)
	for _, u := range users {
		if u.Email == email {
			return u.ID
		}
	}
	t.Fatalf("no user %s", email)
	return ""
}

// getWithin is c.get, failing the test (nil answer) when the whole answer
// takes longer than d: a page must not hang, a refused stream must not open.
func getWithin(t *testing.T, c *client, path string, d time.Duration) (*http.Response, string) {
	t.Helper()
	hc := *c.http
	hc.Timeout = d
	resp, err := hc.Get(c.e.srv.URL + path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return nil, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("%s: answered %d, then %v", path, resp.StatusCode, err)
		return nil, ""
	}
	return resp, string(b)
}
