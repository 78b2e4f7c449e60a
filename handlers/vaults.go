package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

func (h *Handlers) vaultsPage(c echo.Context, status int, f pages.VaultForm) error {
	p := principal(c)
	vs, err := h.RT.VaultList(ctx(c), p)
	if err != nil {
		return err
	}
	rows := make([]pages.VaultRow, 0, len(vs))
	for _, v := range vs {
		rows = append(rows, pages.VaultRow{ID: v.ID, Name: v.Name, Description: v.Description,
			Credentials: len(v.Credentials), Created: isoTime(v.CreatedAt)})
	}
	f.Tenants = h.tenantOptions(c)
	return render(c, status, pages.VaultsPage(h.shell(c, "Vaults", "vaults"), rows, f, p.Can("Vault.create")))
}

// Vaults lists vaults with a form to create one.
func (h *Handlers) Vaults(c echo.Context) error {
	return h.vaultsPage(c, http.StatusOK, pages.VaultForm{})
}

// CreateVault creates a vault from the form.
func (h *Handlers) CreateVault(c echo.Context) error {
	in := runtime.VaultInput{Name: c.FormValue("name"), Description: c.FormValue("description"), Tenant: c.FormValue("tenant")}
	v, err := h.RT.VaultCreate(ctx(c), principal(c), in)
	if e, ok := formError(err); ok {
		f := pages.VaultForm{Name: in.Name, Description: in.Description, Tenant: in.Tenant}
		f.Errors, f.Error = fieldErrors(e)
		return h.vaultsPage(c, statusOf(e.Kind), f)
	}
	if err != nil {
		return err
	}
	h.flash(c, "ok", "Vault "+v.Name+" created.")
	return redirect(c, "/vaults/"+v.ID)
}

// fieldErrors puts each of a runtime error's problems under its field; an
// error that names no field is returned whole, for the top of the form.
func fieldErrors(e *runtime.Error) (map[string]string, string) {
	out := map[string]string{}
	for _, fe := range e.Fields {
		if prev := out[fe.Field]; prev != "" {
			out[fe.Field] = prev + "; " + fe.Detail
		} else {
			out[fe.Field] = fe.Detail
		}
	}
	if len(out) == 0 && e.Field != "" {
		out[e.Field] = e.Detail
	}
	if len(out) == 0 {
		return out, e.Error()
	}
	return out, ""
}

func (h *Handlers) vaultPage(c echo.Context, status int, ref string, f pages.CredentialForm) error {
	return h.vaultPageWith(c, status, ref, f, pages.OAuthForm{})
}

func (h *Handlers) vaultPageWith(c echo.Context, status int, ref string, f pages.CredentialForm, of pages.OAuthForm) error {
	p := principal(c)
	v, err := h.RT.VaultGet(ctx(c), p, ref)
	if err != nil {
		return err
	}
	d := pages.VaultDetail{ID: v.ID, Name: v.Name, Description: v.Description, Created: isoTime(v.CreatedAt), Form: f,
		CanSet: p.Can("Credential.set"), CanDeleteCredential: p.Can("Credential.delete"), CanDelete: p.Can("Vault.delete"),
		DeleteRefusal: h.RT.VaultDeleteRefusal(ctx(c), p, v.ID), OAuth: of, RedirectURI: h.oauthRedirectURI()}
	if d.Form.Type == "" {
		d.Form.Type = "bearer"
	}
	for _, cr := range v.Credentials {
		d.Credentials = append(d.Credentials, pages.CredentialRow{ID: cr.ID, Prefix: cr.Prefix, Type: cr.Type,
			HeaderName: cr.HeaderName, Username: cr.Username, SecretSet: cr.SecretSet,
			Updated: isoTime(cr.UpdatedAt), LastUsed: isoTimePtr(cr.LastUsedAt)})
		oauthRow(&d.Credentials[len(d.Credentials)-1], cr)
	}
	return render(c, status, pages.VaultPage(h.shell(c, v.Name, "vaults"), d))
}

// Vault shows a vault's credentials, never their secrets.
func (h *Handlers) Vault(c echo.Context) error {
	return h.vaultPage(c, http.StatusOK, c.Param("vault"), pages.CredentialForm{})
}

// SetCredential adds or replaces the credential for a prefix. The secret is
// passed to the runtime and dropped: the form it came from is never rendered
// with it again, even when another field was wrong.
func (h *Handlers) SetCredential(c echo.Context) error {
	in := runtime.CredentialInput{Vault: c.Param("vault"), Prefix: c.FormValue("prefix"), Type: c.FormValue("type"),
		HeaderName: c.FormValue("header_name"), Username: c.FormValue("username"), Secret: c.FormValue("secret")}
	if in.Type == runtime.CredentialClientCredentials {
		in.TokenURL, in.ClientID, in.Scopes = c.FormValue("token_url"), c.FormValue("client_id"), c.FormValue("scopes")
	}
	// The form shows both optional fields; only the one the type uses is sent on.
	if in.Type != "header" {
		in.HeaderName = ""
	}
	if in.Type != "basic" {
		in.Username = ""
	}
	cr, err := h.RT.CredentialSet(ctx(c), principal(c), in)
	if e, ok := runtime.AsError(err); ok && (e.Kind == runtime.KindInvalid || e.Kind == runtime.KindConflict) {
		f := pages.CredentialForm{Prefix: in.Prefix, Type: in.Type, HeaderName: c.FormValue("header_name"), Username: c.FormValue("username"),
			TokenURL: c.FormValue("token_url"), ClientID: c.FormValue("client_id"), Scopes: c.FormValue("scopes")}
		f.Errors, f.Error = fieldErrors(e)
		return h.vaultPage(c, statusOf(e.Kind), in.Vault, f)
	}
	if err != nil {
		return h.flashError(c, err, "/vaults/"+in.Vault)
	}
	h.flash(c, "ok", "Credential for "+cr.Prefix+" saved. Its secret is stored sealed and will not be shown again.")
	return redirect(c, "/vaults/"+in.Vault)
}

// DeleteCredential removes one credential from a vault.
func (h *Handlers) DeleteCredential(c echo.Context) error {
	ref := c.Param("vault")
	if err := h.RT.CredentialDelete(ctx(c), principal(c), ref, c.Param("credential")); err != nil {
		return h.flashError(c, err, "/vaults/"+ref)
	}
	h.flash(c, "ok", "Credential deleted.")
	return redirect(c, "/vaults/"+ref)
}

// DeleteVault deletes a vault and its credentials; one bound to a running
// session stays, and the refusal is shown on its page.
func (h *Handlers) DeleteVault(c echo.Context) error {
	ref := c.Param("vault")
	if err := h.RT.VaultDelete(ctx(c), principal(c), ref); err != nil {
		if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindNotFound {
			return err
		}
		return h.flashError(c, err, "/vaults/"+ref)
	}
	h.flash(c, "ok", "Vault deleted.")
	return redirect(c, "/vaults")
}
