package web_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A person never decides a call they made (the runtime refuses it), so their
// pages do not offer Approve and Deny on it and say why; another approver
// gets the buttons on the same pages.
func TestOwnCallOffersNoDecision(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	approver := w.person(owner, "approver@example.com", "member")
	s := w.titledSession("own")
	// The owner's API token is the owner: the call is theirs.
	c := <-w.callAsync(w.owner, s.ID, "mcp__everything__get-env", map[string]any{}, 0)
	if c.Status != "awaiting_approval" || c.Approval == nil {
		t.Fatalf("the call did not wait for approval: %+v", c)
	}
	for _, path := range []string{"/sessions/" + s.ID, "/approvals"} {
		page := mustGet(owner, path)
		if strings.Contains(page, `data-testid="approve"`) || strings.Contains(page, `data-testid="approval-approve"`) ||
			strings.Contains(page, `data-testid="deny"`) || strings.Contains(page, `data-testid="approval-deny"`) {
			t.Fatalf("%s offers its caller Approve or Deny on their own call", path)
		}
		if !strings.Contains(page, `data-testid="approval-own"`) {
			t.Fatalf("%s does not say why its caller cannot decide:\n%s", path, page)
		}
		other := mustGet(approver, path)
		if !strings.Contains(other, "/approvals/"+c.Approval.ID+"/approve") {
			t.Fatalf("%s does not offer another approver the decision", path)
		}
	}
}

// Try a tool's answer re-reads itself while its call waits, and shows the
// decision once it is made.
func TestTryResultFollowsTheDecision(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	approver := w.person(owner, "approver@example.com", "member")
	s := w.titledSession("try")
	c := <-w.callAsync(w.owner, s.ID, "mcp__everything__get-env", map[string]any{}, 0)
	path := "/sessions/" + s.ID + "/calls/" + c.ID + "/try"
	waiting := mustGet(owner, path)
	if !strings.Contains(waiting, `data-status="awaiting_approval"`) || !strings.Contains(waiting, `hx-trigger="sse:calls, sse:call, every 2s"`) {
		t.Fatalf("a waiting answer does not follow its call:\n%s", waiting)
	}
	if link := `href="/approvals?approval=` + c.Approval.ID; !strings.Contains(waiting, link) {
		t.Fatalf("a waiting answer does not link to its approval (%s):\n%s", link, waiting)
	}
	if resp, _ := approver.post("/approvals/"+c.Approval.ID+"/approve", url.Values{"scope": {"call"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	// The approved call runs in the background; wait until it is final.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var done call
		if w.api(w.owner, "GET", "/tool_calls/"+c.ID, nil, &done); done.Status == "succeeded" {
			break
		}
	}
	decided := mustGet(owner, path)
	if !strings.Contains(decided, `data-status="succeeded"`) || strings.Contains(decided, "hx-trigger") {
		t.Fatalf("the decided answer:\n%s", decided)
	}
	if resp, _ := owner.get("/sessions/ses_nope/calls/" + c.ID + "/try"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a call read through another session's path answered %d", resp.StatusCode)
	}
}

// An ended session says so and offers nothing that cannot work.
func TestEndedSessionOffersNothing(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	approver := w.person(owner, "approver@example.com", "member").token()
	s := w.titledSession("done")
	// An approval for the session leaves a rule behind.
	waiting := w.callAsync(w.owner, s.ID, getEnv, map[string]any{}, 30)
	q := w.pending(w.owner, "", 1)
	if st := w.api(approver, "POST", "/approvals/"+q[0].ID+"/approve", map[string]any{"scope": "session"}, nil); st != 200 {
		t.Fatalf("approve for the session: %d", st)
	}
	<-waiting
	var rules []struct{ ID string }
	if w.api(w.owner, "GET", "/sessions/"+s.ID+"/rules", nil, &rules); len(rules) != 1 {
		t.Fatalf("rules: %+v", rules)
	}
	if !strings.Contains(mustGet(owner, "/sessions/"+s.ID), `data-testid="revoke-rule"`) {
		t.Fatal("a running session's rule is not offered Revoke")
	}
	if resp, _ := owner.post("/sessions/"+s.ID+"/end", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("end: %d", resp.StatusCode)
	}
	page := mustGet(owner, "/sessions/"+s.ID)
	if !strings.Contains(page, `data-testid="try-ended"`) {
		t.Fatalf("the ended session's Try a tool does not say it ended:\n%s", page)
	}
	for _, offer := range []string{`data-testid="try-submit"`, `data-testid="refresh-tools"`, `data-testid="session-end"`, `sse-connect="/sessions/`, `data-testid="revoke-rule"`} {
		if strings.Contains(page, offer) {
			t.Errorf("the ended session's page still offers %s", offer)
		}
	}
	var p problem
	if st := w.api(w.owner, "DELETE", "/sessions/"+s.ID+"/rules/"+rules[0].ID, nil, &p); st != http.StatusConflict || p.Code != "session_ended" {
		t.Errorf("revoking an ended session's rule: %d %+v", st, p)
	}
}

// An agent that has run cannot be deleted: its page disables Delete agent and
// says why before anyone clicks; an agent that never ran offers it.
func TestAgentDeleteIsOffWithTheReasonWhenItCannotSucceed(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	w.session()
	page := mustGet(owner, "/agents/"+w.agent)
	button := regexp.MustCompile(`<button[^>]*data-testid="agent-delete"[^>]*>`).FindString(page)
	if !strings.Contains(button, "disabled") || !strings.Contains(button, `aria-describedby="agent-delete-why"`) {
		t.Fatalf("Delete agent is not disabled and described: %s", button)
	}
	if why := fieldText(page, "agent-delete-why"); !strings.Contains(why, "the agent has 1 session:") {
		t.Fatalf("the reason reads %q", why)
	}
	var fresh struct{ ID string }
	if st := w.api(w.owner, "POST", "/agents", map[string]any{"name": "never-ran"}, &fresh); st != 201 {
		t.Fatalf("Agent.create: %d", st)
	}
	page = mustGet(owner, "/agents/"+fresh.ID)
	button = regexp.MustCompile(`<button[^>]*data-testid="agent-delete"[^>]*>`).FindString(page)
	if button == "" || strings.Contains(button, "disabled") || strings.Contains(page, `data-testid="agent-delete-why"`) {
		t.Fatalf("an agent that never ran is not offered Delete: %s", button)
	}
}

var deleteButtonRe = regexp.MustCompile(`<button[^>]*data-testid="(?:vault|skill)-delete"[^>]*>`)

// A vault bound to a running session and a skill a version grants cannot be
// deleted: their pages disable Delete and say why, with the verb's own words;
// once nothing holds them, Delete is offered again.
func TestDeleteIsOffWhileAVaultOrSkillIsInUse(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	s := w.session(w.vault)
	if st := w.api(w.owner, "POST", "/skills", map[string]any{"name": "refund-policy", "files": []map[string]any{{"path": "SKILL.md", "content": "x"}}}, nil); st != 201 {
		t.Fatalf("Skill.create: %d", st)
	}
	var draft version
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	if st, body := w.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", `{"skills":[{"name":"refunds","skill":"refund-policy"}]}`); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	cases := []struct{ path, why, reason string }{
		{"/vaults/" + w.vault, "vault-delete-why", "bound to 1 running session(s)"},
		{"/skills/refund-policy", "skill-delete-why", "is granted by support version 2"},
	}
	for _, c := range cases {
		page := mustGet(owner, c.path)
		if b := deleteButtonRe.FindString(page); !strings.Contains(b, "disabled") || !strings.Contains(b, `aria-describedby="`+c.why+`"`) {
			t.Errorf("%s: Delete is not disabled and described: %s", c.path, b)
		}
		if got := fieldText(page, c.why); !strings.Contains(got, c.reason) {
			t.Errorf("%s: the reason reads %q, want %q", c.path, got, c.reason)
		}
	}
	if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 {
		t.Fatalf("Session.end: %d", st)
	}
	if st, body := w.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", `{}`); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	for _, c := range cases {
		page := mustGet(owner, c.path)
		if b := deleteButtonRe.FindString(page); b == "" || strings.Contains(b, "disabled") || strings.Contains(page, c.why) {
			t.Errorf("%s: with nothing holding it, Delete is not offered: %s", c.path, b)
		}
	}
}

// Every confirmation names what it acts on, so the dialog asks about this
// session, this version, this grant, not "this".
func TestConfirmationsNameTheThing(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	s := w.titledSession("Refunds")
	var draft version
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{"from": w.version}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	cases := []struct{ path, confirm string }{
		{"/sessions/" + s.ID, "End the session Refunds? Its token stops working"},
		{"/versions/" + draft.ID, "Publish version 2 of support? It becomes immutable."},
		{"/versions/" + draft.ID, "Remove the MCP server grant `everything`?"},
		{"/agents/" + w.agent, "Delete the agent support and all its versions?"},
		{"/vaults/" + w.vault, "Delete the vault customer-a and all its credentials?"},
		{"/tokens", "Revoke the token test? Whatever uses it stops working at once, and so do the tokens made with it."},
	}
	for _, c := range cases {
		if page := mustGet(owner, c.path); !strings.Contains(html.UnescapeString(page), `data-confirm="`+c.confirm) {
			t.Errorf("%s does not ask %q", c.path, c.confirm)
		}
	}
}

// The last owner cannot be removed: the People page disables their Remove
// and says why; with a second owner, both may be removed.
func TestRemoveIsOffForTheLastOwner(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	button := func(page, email string) string {
		return regexp.MustCompile(`<button[^>]*data-testid="remove-` + regexp.QuoteMeta(email) + `"[^>]*>`).FindString(page)
	}
	page := mustGet(owner, "/people")
	if b := button(page, "owner@example.com"); !strings.Contains(b, "disabled") || !strings.Contains(b, "aria-describedby") {
		t.Fatalf("the last owner's Remove is not disabled and described: %s", b)
	}
	if why := fieldText(page, "remove-why-owner@example.com"); !strings.Contains(why, "the last owner cannot be removed") {
		t.Fatalf("the reason reads %q", why)
	}
	e.person(owner, "second@example.com", "owner")
	page = mustGet(owner, "/people")
	for _, email := range []string{"owner@example.com", "second@example.com"} {
		if b := button(page, email); b == "" || strings.Contains(b, "disabled") {
			t.Errorf("with two owners, %s's Remove is not offered: %s", email, b)
		}
	}
}
