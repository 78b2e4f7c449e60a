package handlers

import (
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// Tenants (issue 13): customers of the operator, each holding its own
// sessions, vaults and people (runtime/tenants.go).

// APITenantList is Tenant.list.
func (h *Handlers) APITenantList(c echo.Context) error {
	out, err := h.RT.TenantList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APITenantCreate is Tenant.create.
func (h *Handlers) APITenantCreate(c echo.Context) error {
	var in runtime.TenantInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.TenantCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APITenantGet is Tenant.get.
func (h *Handlers) APITenantGet(c echo.Context) error {
	out, err := h.RT.TenantGet(ctx(c), principal(c), c.Param("tenant"))
	return answer(c, http.StatusOK, out, err)
}

// APITenantUpdate is Tenant.update.
func (h *Handlers) APITenantUpdate(c echo.Context) error {
	var in runtime.TenantInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.TenantUpdate(ctx(c), principal(c), c.Param("tenant"), in)
	return answer(c, http.StatusOK, out, err)
}

// APITenantDelete is Tenant.delete.
func (h *Handlers) APITenantDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.TenantDelete(ctx(c), principal(c), c.Param("tenant")))
}

func (h *Handlers) tenantsPage(c echo.Context, status int, f pages.TenantForm) error {
	p := principal(c)
	ts, err := h.RT.TenantList(ctx(c), p)
	if err != nil {
		return err
	}
	view := pages.TenantsPage{Form: f, CanCreate: p.Can("Tenant.create"), CanUpdate: p.Can("Tenant.update"), CanDelete: p.Can("Tenant.delete")}
	for _, t := range ts {
		view.Rows = append(view.Rows, pages.TenantRow{ID: t.ID, Name: t.Name, Sessions: t.Sessions, Vaults: t.Vaults, People: t.People, Created: isoTime(t.CreatedAt)})
	}
	return render(c, status, pages.Tenants(h.shell(c, "Tenants", "tenants"), view))
}

// Tenants lists the tenants with a form to add one.
func (h *Handlers) Tenants(c echo.Context) error {
	return h.tenantsPage(c, http.StatusOK, pages.TenantForm{})
}

// CreateTenant adds a tenant from the form.
func (h *Handlers) CreateTenant(c echo.Context) error {
	in := runtime.TenantInput{Name: c.FormValue("name")}
	t, err := h.RT.TenantCreate(ctx(c), principal(c), in)
	if e, ok := formError(err); ok {
		f := pages.TenantForm{Name: in.Name}
		f.Errors, f.Error = fieldErrors(e)
		return h.tenantsPage(c, statusOf(e.Kind), f)
	}
	if err != nil {
		return err
	}
	h.flash(c, "ok", "Tenant "+t.Name+" created.")
	return redirect(c, "/tenants")
}

// UpdateTenant renames a tenant.
func (h *Handlers) UpdateTenant(c echo.Context) error {
	t, err := h.RT.TenantUpdate(ctx(c), principal(c), c.Param("tenant"), runtime.TenantInput{Name: c.FormValue("name")})
	if err != nil {
		return h.flashError(c, err, "/tenants")
	}
	h.flash(c, "ok", "Tenant renamed to "+t.Name+".")
	return redirect(c, "/tenants")
}

// DeleteTenant deletes an empty tenant.
func (h *Handlers) DeleteTenant(c echo.Context) error {
	if err := h.RT.TenantDelete(ctx(c), principal(c), c.Param("tenant")); err != nil {
		return h.flashError(c, err, "/tenants")
	}
	h.flash(c, "ok", "Tenant deleted.")
	return redirect(c, "/tenants")
}

// tenantOptions are the choices of a form's tenant picker, "" (the
// operator) first; none for a tenant's person, whose things are always
// their own tenant's.
func (h *Handlers) tenantOptions(c echo.Context) []pages.Option {
	p := principal(c)
	if p.TenantID != "" || !p.Can("Tenant.list") {
		return nil
	}
	names := h.RT.TenantNames(ctx(c), p)
	if len(names) == 0 {
		return nil
	}
	out := []pages.Option{{Value: "", Label: "The operator (no tenant)"}}
	for id, name := range names {
		out = append(out, pages.Option{Value: id, Label: name})
	}
	sort.Slice(out[1:], func(i, j int) bool { return out[i+1].Label < out[j+1].Label })
	return out
}
