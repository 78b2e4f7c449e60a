package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

func (h *Handlers) peoplePage(c echo.Context, status int, extra pages.PeoplePage) error {
	p := principal(c)
	users, err := h.RT.UserList(ctx(c), p)
	if err != nil {
		return err
	}
	view := extra
	view.Manage = p.Can("User.update")
	view.Levels = runtime.AccessLevels
	view.Tenants = h.tenantOptions(c)
	view.Seating = h.seating(c)
	tenants := h.RT.TenantNames(ctx(c), p)
	view.TenantColumn = len(tenants) > 0
	if p.TenantID != "" {
		view.Levels = tenantLevels()
	}
	for _, u := range users {
		row := pages.PersonRow{ID: u.ID, Email: u.Email, Name: u.Name, Access: u.Access, Since: isoTime(u.CreatedAt), You: u.ID == p.ID}
		if u.Tenant != "" {
			row.Tenant, row.Levels = tenants[u.Tenant], tenantLevels()
			if row.Tenant == "" {
				row.Tenant = u.Tenant
			}
		}
		if view.Manage {
			row.RemoveRefusal = h.RT.UserRemoveRefusal(ctx(c), p, u.ID)
		}
		view.People = append(view.People, row)
	}
	invs, err := h.RT.PendingInvites(ctx(c), p)
	if err != nil {
		return err
	}
	for _, i := range invs {
		view.Pending = append(view.Pending, pages.PendingInvite{ID: i.ID, Email: i.Email, Access: i.Access, Expires: isoTime(i.ExpiresAt)})
	}
	return render(c, status, pages.People(h.shell(c, "People", "people"), view))
}

// People lists people with their access levels, and the invitation link
// the Invite form just made, once.
func (h *Handlers) People(c echo.Context) error {
	var view pages.PeoplePage
	if v, ok := h.takeRevealed(c, "invite"); ok {
		email, rest, _ := strings.Cut(v, "\x00")
		access, link, _ := strings.Cut(rest, "\x00")
		view.Invite = &pages.InviteLink{Email: email, Access: access, URL: link}
	}
	return h.peoplePage(c, http.StatusOK, view)
}

// Invite creates a one-time invitation link and redirects to the People page,
// which shows it once: a reload there invites no one again.
func (h *Handlers) Invite(c echo.Context) error {
	email, access := c.FormValue("email"), c.FormValue("access")
	inv, err := h.RT.UserInviteTenant(ctx(c), principal(c), email, access, c.FormValue("tenant"))
	if e, ok := formError(err); ok {
		return h.peoplePage(c, statusOf(e.Kind), pages.PeoplePage{Error: e.Error(), Email: email, InviteAccess: access, InviteTenant: c.FormValue("tenant")})
	}
	if err != nil {
		return err
	}
	h.reveal(c, "invite", inv.Email+"\x00"+inv.Access+"\x00"+h.BaseURL+"/invite/"+inv.Token)
	return redirect(c, "/people")
}

// ChangeAccess sets a person's access level.
func (h *Handlers) ChangeAccess(c echo.Context) error {
	access := c.FormValue("access")
	u, err := h.RT.UserUpdate(ctx(c), principal(c), runtime.UserUpdateInput{User: c.Param("user"), Access: &access})
	if err != nil {
		return h.flashError(c, err, "/people")
	}
	h.flash(c, "ok", "Access changed: "+u.Email+" is now "+u.Access+".")
	return redirect(c, "/people")
}

// RemovePerson removes a person; their sessions and tokens end at once.
func (h *Handlers) RemovePerson(c echo.Context) error {
	if err := h.RT.UserRemove(ctx(c), principal(c), c.Param("user")); err != nil {
		return h.flashError(c, err, "/people")
	}
	h.flash(c, "ok", "Removed.")
	return redirect(c, "/people")
}

// RevokeInvite ends a pending invitation's link.
func (h *Handlers) RevokeInvite(c echo.Context) error {
	inv, err := h.RT.UserRevokeInvite(ctx(c), principal(c), c.Param("invite"))
	if err != nil {
		return h.flashError(c, err, "/people")
	}
	h.flash(c, "ok", "The invitation for "+inv.Email+" is revoked; its link no longer works.")
	return redirect(c, "/people")
}

// flashError shows a refusal a person can act on as a flash on the page they
// came from; anything else goes to the error handler.
func (h *Handlers) flashError(c echo.Context, err error, back string) error {
	e, ok := runtime.AsError(err)
	if !ok || e.Kind == runtime.KindInternal {
		return err
	}
	h.flash(c, "error", flashSentence(e))
	return redirect(c, back)
}

// Tokens lists the person's API tokens.
func (h *Handlers) Tokens(c echo.Context) error {
	created, _ := h.takeRevealed(c, "token")
	return h.tokensPage(c, http.StatusOK, created, "")
}

func (h *Handlers) tokensPage(c echo.Context, status int, created, errMsg string) error {
	return h.apiTokensPage(c, status, created, errMsg)
}

// CreateToken creates a token and redirects to the Tokens page, which shows
// its secret once.
func (h *Handlers) CreateToken(c echo.Context) error {
	t, err := h.RT.TokenCreate(ctx(c), principal(c), runtime.TokenCreateInput{Name: c.FormValue("name"), Expires: c.FormValue("expires"),
		Permissions: tokenFormPermissions(c), Tools: c.FormValue("tools")})
	if e, ok := formError(err); ok {
		return h.tokensPage(c, statusOf(e.Kind), "", e.Error())
	}
	if err != nil {
		return err
	}
	h.reveal(c, "token", t.Token)
	return redirect(c, "/tokens")
}

// RevokeToken revokes one of the person's tokens.
func (h *Handlers) RevokeToken(c echo.Context) error {
	if err := h.RT.TokenRevoke(ctx(c), principal(c), c.Param("token")); err != nil {
		return h.flashError(c, err, "/tokens")
	}
	h.flash(c, "ok", "Token revoked.")
	return redirect(c, "/tokens")
}

// tenantLevels are the access levels a tenant's person can hold: every one
// but owner (a tenant has no owner; naming one is always refused).
func tenantLevels() []string {
	var out []string
	for _, l := range runtime.AccessLevels {
		if l != runtime.AccessOwner {
			out = append(out, l)
		}
	}
	return out
}
