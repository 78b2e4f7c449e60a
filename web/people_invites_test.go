package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/subako/subako/models"
)

var revokeInviteForm = regexp.MustCompile(`action="(/people/invites/inv_[a-z0-9]+/revoke)"`)

// Pending invitations are listed on People, without their links, and one can
// be revoked behind a confirm that names it: its link stops working at once,
// the revocation is recorded, and an admin may not revoke an owner's.
func TestPendingInvitationsAreListedAndRevocable(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	_, page := owner.submit("/people/invite", url.Values{"email": {"ann@example.com"}, "access": {"member"}})
	link := inviteLink.FindStringSubmatch(page)
	if link == nil {
		t.Fatalf("no invitation link:\n%s", page)
	}
	page = mustGet(owner, "/people")
	if strings.Contains(page, link[1]) || !strings.Contains(page, `data-testid="invites"`) || !strings.Contains(page, "ann@example.com") {
		t.Fatalf("the People page does not list the pending invitation (or shows its link again):\n%s", page)
	}
	if !strings.Contains(page, `data-confirm="Revoke the invitation for ann@example.com? Its link stops working at once."`) {
		t.Fatalf("Revoke has no confirmation naming the person:\n%s", page)
	}
	form := revokeInviteForm.FindStringSubmatch(page)
	if form == nil {
		t.Fatalf("no Revoke form:\n%s", page)
	}
	_, page = owner.submit(form[1], url.Values{})
	if !strings.Contains(page, "The invitation for ann@example.com is revoked") || strings.Contains(page, `data-testid="invite-row"`) {
		t.Fatalf("after Revoke the invitation is still listed or no flash says so:\n%s", page)
	}
	if resp, _ := e.browser().post("/invite/"+link[1], url.Values{"password": {password}}); resp.StatusCode == http.StatusSeeOther {
		t.Fatal("a revoked invitation link still lets someone in")
	}
	var n int64
	e.rt.DB().Model(&models.Action{}).Where("verb = ? AND verdict = ?", "User.revoke_invite", "allowed").Count(&n)
	if n != 1 {
		t.Fatalf("User.revoke_invite recorded %d times, want 1", n)
	}
	// On the API too: User.revoke_invite by id, refused naming the reason.
	tok := owner.token()
	var p problem
	if st := e.api(tok, "DELETE", "/invites/"+strings.Split(form[1], "/")[3], nil, &p); st != 409 || p.Code != "invite_not_pending" {
		t.Fatalf("revoking a revoked invitation on the API: %d %+v", st, p)
	}
	if st := e.api(tok, "DELETE", "/invites/inv_nosuch", nil, &p); st != 404 {
		t.Fatalf("revoking an unknown invitation: %d", st)
	}
	// Revoking again is refused with the reason, not a 500.
	if _, page = owner.submit(form[1], url.Values{}); !strings.Contains(page, "no longer pending") {
		t.Fatalf("revoking twice does not say why:\n%s", page)
	}

	// An admin sees an owner's invitation but may not revoke it; a member
	// sees no invitations at all.
	owner.submit("/people/invite", url.Values{"email": {"heir@example.com"}, "access": {"owner"}})
	admin := e.person(owner, "admin@example.com", "admin")
	form = revokeInviteForm.FindStringSubmatch(mustGet(admin, "/people"))
	if form == nil {
		t.Fatal("the admin sees no pending invitation")
	}
	if _, page = admin.submit(form[1], url.Values{}); !strings.Contains(page, "Only an owner may revoke an owner") {
		t.Fatalf("an admin revoked an owner's invitation:\n%s", page)
	}
	owner.submit("/people/invite", url.Values{"email": {"bob@example.com"}, "access": {"viewer"}})
	member := e.person(owner, "mem@example.com", "member")
	if page := mustGet(member, "/people"); strings.Contains(page, "bob@example.com") || strings.Contains(page, `data-testid="invites"`) {
		t.Fatalf("a member sees pending invitations:\n%s", page)
	}
}

// The API tokens page is reached from every console page.
func TestTokensPageIsLinkedFromTheConsole(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	for _, path := range []string{"/", "/people", "/usage"} {
		if page := mustGet(owner, path); !strings.Contains(page, `href="/tokens" data-testid="nav-tokens"`) {
			t.Fatalf("%s has no link to the API tokens page", path)
		}
	}
	if page := mustGet(owner, "/tokens"); !strings.Contains(page, `href="/tokens" aria-current="page"`) {
		t.Fatal("the tokens link is not marked current on the tokens page")
	}
}
