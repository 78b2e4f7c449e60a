package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// Roles, seats and Changes (issue 13): the API verbs and the console's Roles
// and Changes pages and the People page's "Role.assign".

// APIRoleList is Role.list.
func (h *Handlers) APIRoleList(c echo.Context) error {
	out, err := h.RT.RoleList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APIRoleCreate is Role.create.
func (h *Handlers) APIRoleCreate(c echo.Context) error {
	var in runtime.RoleInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.RoleCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APIRoleGet is Role.get.
func (h *Handlers) APIRoleGet(c echo.Context) error {
	out, err := h.RT.RoleGet(ctx(c), principal(c), c.Param("role"))
	return answer(c, http.StatusOK, out, err)
}

// APIRoleUpdate is Role.update.
func (h *Handlers) APIRoleUpdate(c echo.Context) error {
	var in runtime.RoleInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Role = c.Param("role")
	out, err := h.RT.RoleUpdate(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}

// APIRoleDelete is Role.delete.
func (h *Handlers) APIRoleDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.RoleDelete(ctx(c), principal(c), c.Param("role")))
}

// APISeatList is Seat.list.
func (h *Handlers) APISeatList(c echo.Context) error {
	var f runtime.SeatFilter
	if err := (&echo.DefaultBinder{}).BindQueryParams(c, &f); err != nil {
		return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_query", Title: "Invalid query", Detail: err.Error()}
	}
	out, err := h.RT.SeatList(ctx(c), principal(c), f)
	return answer(c, http.StatusOK, out, err)
}

// APISeatCreate is Seat.create.
func (h *Handlers) APISeatCreate(c echo.Context) error {
	var in runtime.SeatInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.SeatCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APISeatDelete is Seat.delete.
func (h *Handlers) APISeatDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.SeatDelete(ctx(c), principal(c), c.Param("seat")))
}

// APIChangeList is Change.list.
func (h *Handlers) APIChangeList(c echo.Context) error {
	var f runtime.ChangeFilter
	if err := (&echo.DefaultBinder{}).BindQueryParams(c, &f); err != nil {
		return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_query", Title: "Invalid query", Detail: err.Error()}
	}
	out, err := h.RT.ChangeList(ctx(c), principal(c), f)
	return answer(c, http.StatusOK, out, err)
}

// APIChangeUndo is Change.undo.
func (h *Handlers) APIChangeUndo(c echo.Context) error {
	out, err := h.RT.ChangeUndo(ctx(c), principal(c), c.Param("change"))
	return answer(c, http.StatusOK, out, err)
}

// verbGroups are the registry's verbs grouped by noun, for the checkboxes.
func verbGroups() []pages.VerbGroup {
	by := map[string][]string{}
	for _, v := range runtime.AllVerbs() {
		noun, _, _ := strings.Cut(v, ".")
		by[noun] = append(by[noun], v)
	}
	out := make([]pages.VerbGroup, 0, len(by))
	for noun, vs := range by {
		out = append(out, pages.VerbGroup{Noun: noun, Verbs: vs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Noun < out[j].Noun })
	return out
}

// heldVerbGroups are the verbs p may put in a role: those p holds (any
// other is refused), and those a refused form had checked (kept as typed),
// grouped by noun.
func heldVerbGroups(p runtime.Principal, typed []string) []pages.VerbGroup {
	var out []pages.VerbGroup
	for _, g := range verbGroups() {
		var vs []string
		for _, v := range g.Verbs {
			if p.Can(v) || slices.Contains(typed, v) {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			out = append(out, pages.VerbGroup{Noun: g.Noun, Verbs: vs})
		}
	}
	return out
}

// rolesForm is what the role forms offer.
func (h *Handlers) rolesForm(c echo.Context, typed []string) pages.RoleForm {
	p := principal(c)
	return pages.RoleForm{Groups: heldVerbGroups(p, typed), Scopes: h.RT.ScopeChoices(ctx(c), p), Periods: runtime.LimitPeriods()}
}

// Roles lists the built-in access levels and the roles, with a form to create one.
func (h *Handlers) Roles(c echo.Context) error {
	return h.rolesPage(c, http.StatusOK, "", pages.RoleDraft{})
}

func (h *Handlers) rolesPage(c echo.Context, status int, errMsg string, draft pages.RoleDraft) error {
	p := principal(c)
	roles, err := h.RT.RoleList(ctx(c), p)
	if err != nil {
		return err
	}
	if p.TenantID != "" { // a tenant's people hold the built-in levels without the operator's verbs
		for i := range roles {
			if roles[i].BuiltIn {
				var kept []runtime.PermissionView
				for _, pm := range roles[i].Permissions {
					if !runtime.OperatorOnly(pm.Verb) {
						kept = append(kept, pm)
					}
				}
				roles[i].Permissions = kept
			}
		}
	}
	view := pages.RolesPage{Roles: roles, Create: p.Can("Role.create"), Error: errMsg, Draft: draft}
	if view.Create {
		view.Form = h.rolesForm(c, draft.Verbs)
	}
	return render(c, status, pages.Roles(h.shell(c, "Roles", "roles"), view))
}

// permissionsFromForm reads the checked verbs and the one scope and limit
// they share.
func permissionsFromForm(c echo.Context) ([]runtime.PermissionInput, pages.RoleDraft, error) {
	form, _ := c.FormParams()
	d := pages.RoleDraft{Name: c.FormValue("name"), Description: c.FormValue("description"), DecayDays: c.FormValue("decay_days"),
		Verbs: form["verb"], Scope: c.FormValue("scope"), LimitCount: c.FormValue("limit_count"), LimitPeriod: c.FormValue("limit_period"),
		LimitField: c.FormValue("limit_field"), LimitValues: c.FormValue("limit_values"), LimitSpendSC: c.FormValue("limit_spend_sc")}
	base := runtime.PermissionInput{Scope: d.Scope, LimitPeriod: d.LimitPeriod, LimitField: d.LimitField}
	if d.LimitCount != "" {
		n, err := strconv.Atoi(strings.TrimSpace(d.LimitCount))
		if err != nil {
			return nil, d, &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_limit", Field: "limit_count", Detail: "limit count must be a whole number"}
		}
		base.LimitCount = n
	}
	if d.LimitSpendSC != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(d.LimitSpendSC), 64)
		if err != nil {
			return nil, d, &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_limit", Field: "limit_spend_sc", Detail: "spend ceiling must be a number of SC"}
		}
		base.LimitSpendSC = f
	}
	for _, v := range strings.Split(d.LimitValues, ",") {
		if v = strings.TrimSpace(v); v != "" {
			base.LimitValues = append(base.LimitValues, v)
		}
	}
	out := make([]runtime.PermissionInput, 0, len(d.Verbs))
	for _, v := range d.Verbs {
		pi := base
		pi.Verb = v
		out = append(out, pi)
	}
	return out, d, nil
}

// CreateRole is Role.create from the Roles page.
func (h *Handlers) CreateRole(c echo.Context) error {
	perms, d, err := permissionsFromForm(c)
	if err == nil {
		in := runtime.RoleInput{Name: &d.Name, Description: &d.Description, Permissions: &perms}
		if strings.TrimSpace(d.DecayDays) != "" {
			n, aerr := strconv.Atoi(strings.TrimSpace(d.DecayDays))
			if aerr != nil {
				err = &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_decay_days", Field: "decay_days", Detail: "decay days must be a whole number"}
			}
			in.DecayDays = &n
		}
		if err == nil {
			var role runtime.RoleView
			role, err = h.RT.RoleCreate(ctx(c), principal(c), in)
			if err == nil {
				h.flash(c, "ok", "Role "+role.Name+" created.")
				return redirect(c, "/roles/"+role.ID)
			}
		}
	}
	if e, ok := roleFormError(c, err, "Role.create"); ok {
		return h.rolesPage(c, statusOf(e.Kind), e.Error(), d)
	}
	return err
}

// roleFormError is formError, and also the refusal to hand out a permission
// its maker does not hold, for someone who may use the form (verb): that
// form comes back as typed with the refusal, not as an error page.
func roleFormError(c echo.Context, err error, verb string) (*runtime.Error, bool) {
	if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindForbidden && principal(c).Can(verb) {
		return e, true
	}
	return formError(err)
}

// Role shows one role (a built-in level read-only), its permissions and seats.
func (h *Handlers) Role(c echo.Context) error {
	return h.rolePage(c, http.StatusOK, "", pages.RoleDraft{})
}

func (h *Handlers) rolePage(c echo.Context, status int, errMsg string, draft pages.RoleDraft) error {
	p := principal(c)
	role, err := h.RT.RoleGet(ctx(c), p, c.Param("role"))
	if err != nil {
		return err
	}
	view := pages.RolePage{Role: role, Error: errMsg, Draft: draft, Groups: verbGroups()}
	if !role.BuiltIn {
		view.Edit = p.Can("Role.update")
		view.Delete = p.Can("Role.delete")
		view.Seat = p.Can("Seat.create")
		view.Unseat = p.Can("Seat.delete")
		if view.Edit {
			view.Form = h.rolesForm(c, draft.Verbs)
		}
		if p.Can("Seat.list") {
			view.Seats, _ = h.RT.SeatList(ctx(c), p, runtime.SeatFilter{Role: role.ID})
		}
		if view.Seat {
			if users, err := h.RT.UserList(ctx(c), p); err == nil {
				for _, u := range users {
					view.People = append(view.People, pages.Option{Value: u.ID, Label: u.Email})
				}
			}
		}
	}
	return render(c, status, pages.Role(h.shell(c, "Role "+role.Name, "roles"), view))
}

// UpdateRole changes a role's name, description and decay.
func (h *Handlers) UpdateRole(c echo.Context) error {
	name, desc := c.FormValue("name"), c.FormValue("description")
	in := runtime.RoleInput{Role: c.Param("role"), Name: &name, Description: &desc}
	if s := strings.TrimSpace(c.FormValue("decay_days")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return h.rolePage(c, http.StatusUnprocessableEntity, "decay_days: decay days must be a whole number", pages.RoleDraft{})
		}
		in.DecayDays = &n
	}
	role, err := h.RT.RoleUpdate(ctx(c), principal(c), in)
	if e, ok := formError(err); ok {
		return h.rolePage(c, statusOf(e.Kind), e.Error(), pages.RoleDraft{})
	}
	if err != nil {
		return err
	}
	h.flash(c, "ok", "Role "+role.Name+" saved.")
	return redirect(c, "/roles/"+role.ID)
}

// currentPermissions are a role's permissions as inputs, to add to or remove from.
func currentPermissions(role runtime.RoleView) []runtime.PermissionInput {
	out := make([]runtime.PermissionInput, 0, len(role.Permissions))
	for _, pm := range role.Permissions {
		out = append(out, pm.PermissionInput)
	}
	return out
}

// AddRolePermissions adds the checked verbs, in one scope with one limit.
func (h *Handlers) AddRolePermissions(c echo.Context) error {
	p := principal(c)
	role, err := h.RT.RoleGet(ctx(c), p, c.Param("role"))
	if err != nil {
		return err
	}
	perms, d, err := permissionsFromForm(c)
	if err == nil && len(perms) == 0 {
		err = &runtime.Error{Kind: runtime.KindInvalid, Code: "verb_required", Field: "verb", Detail: "check at least one verb to add"}
	}
	if err == nil {
		all := append(currentPermissions(role), perms...)
		_, err = h.RT.RoleUpdate(ctx(c), p, runtime.RoleInput{Role: role.ID, Permissions: &all})
	}
	if e, ok := roleFormError(c, err, "Role.update"); ok {
		return h.rolePage(c, statusOf(e.Kind), e.Error(), d)
	}
	if err != nil {
		return err
	}
	h.flash(c, "ok", "Added "+strconv.Itoa(len(perms))+" to role "+role.Name+".")
	return redirect(c, "/roles/"+role.ID)
}

// RemoveRolePermission removes one permission from a role.
func (h *Handlers) RemoveRolePermission(c echo.Context) error {
	p := principal(c)
	role, err := h.RT.RoleGet(ctx(c), p, c.Param("role"))
	if err != nil {
		return err
	}
	var keep []runtime.PermissionInput
	for _, pm := range role.Permissions {
		if pm.ID != c.Param("permission") {
			keep = append(keep, pm.PermissionInput)
		}
	}
	if keep == nil {
		keep = []runtime.PermissionInput{}
	}
	if _, err := h.RT.RoleUpdate(ctx(c), p, runtime.RoleInput{Role: role.ID, Permissions: &keep}); err != nil {
		return h.flashError(c, err, "/roles/"+role.ID)
	}
	h.flash(c, "ok", "Permission removed from role "+role.Name+"; its seats lose it at once.")
	return redirect(c, "/roles/"+role.ID)
}

// DeleteRole deletes a role and its seats.
func (h *Handlers) DeleteRole(c echo.Context) error {
	if err := h.RT.RoleDelete(ctx(c), principal(c), c.Param("role")); err != nil {
		return h.flashError(c, err, "/roles/"+c.Param("role"))
	}
	h.flash(c, "ok", "Role deleted; its seats ended. Undo it on the Changes page.")
	return redirect(c, "/roles")
}

// SeatPerson seats a person in a role (People page: Role.assign; a role's page).
func (h *Handlers) SeatPerson(c echo.Context) error {
	user, role := c.Param("user"), c.Param("role")
	if user == "" {
		user = c.FormValue("user")
	}
	if role == "" {
		role = c.FormValue("role")
	}
	back := "/people"
	if c.Param("role") != "" {
		back = "/roles/" + url.PathEscape(c.Param("role"))
	}
	s, err := h.RT.SeatCreate(ctx(c), principal(c), runtime.SeatInput{User: user, Role: role})
	if err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", s.Email+" now fills role "+s.RoleName+".")
	return redirect(c, back)
}

// UnseatPerson ends a seat: its permissions end at once.
func (h *Handlers) UnseatPerson(c echo.Context) error {
	back := "/people"
	if r := c.FormValue("role"); r != "" {
		back = "/roles/" + url.PathEscape(r)
	}
	if err := h.RT.SeatDelete(ctx(c), principal(c), c.Param("seat")); err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Unseated: the role's permissions ended at once.")
	return redirect(c, back)
}

// Changes lists the Changes to who may do what, with Undo.
func (h *Handlers) Changes(c echo.Context) error {
	p := principal(c)
	f := runtime.ChangeFilter{Kind: c.QueryParam("kind"), Before: c.QueryParam("before")}
	list, err := h.RT.ChangeList(ctx(c), p, f)
	if err != nil {
		if e, ok := formError(err); ok && e.Kind == runtime.KindInvalid {
			list = nil
		} else {
			return err
		}
	}
	view := pages.ChangesPage{Undo: p.Can("Change.undo"), Kind: f.Kind}
	for _, ch := range list {
		view.Rows = append(view.Rows, pages.ChangeRow{ChangeView: ch, When: isoTime(ch.CreatedAt), Before: prettyJSON(ch.Before), After: prettyJSON(ch.After)})
	}
	if len(list) == 50 {
		view.Older = "/changes?before=" + list[len(list)-1].ID
		if f.Kind != "" {
			view.Older += "&kind=" + f.Kind
		}
	}
	return render(c, http.StatusOK, pages.Changes(h.shell(c, "Changes", "changes"), view))
}

// UndoChange is Change.undo from the Changes page.
func (h *Handlers) UndoChange(c echo.Context) error {
	u, err := h.RT.ChangeUndo(ctx(c), principal(c), c.Param("change"))
	if err != nil {
		return h.flashError(c, err, "/changes")
	}
	h.flash(c, "ok", "Undone: "+strings.TrimPrefix(u.Summary, "undid: ")+".")
	return redirect(c, "/changes")
}

// seating is the People page's Role.assign: each person's seats, and the
// roles a seat can be made in (nil for someone who may not list seats).
func (h *Handlers) seating(c echo.Context) *pages.Seating {
	p := principal(c)
	if !p.Can("Seat.list") {
		return nil
	}
	seats, err := h.RT.SeatList(ctx(c), p, runtime.SeatFilter{})
	if err != nil {
		return nil
	}
	st := &pages.Seating{Seats: map[string][]runtime.SeatView{}, Seat: p.Can("Seat.create"), Unseat: p.Can("Seat.delete")}
	for _, s := range seats {
		st.Seats[s.User] = append(st.Seats[s.User], s)
	}
	if st.Seat {
		if roles, err := h.RT.RoleList(ctx(c), p); err == nil {
			for _, r := range roles {
				if !r.BuiltIn {
					st.Roles = append(st.Roles, pages.Option{Value: r.ID, Label: r.Name})
				}
			}
		}
	}
	return st
}
