package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// apiTokensPage is the API tokens page: each token with its permissions
// (scopes shown by name), and the form offering the verbs the person holds.
func (h *Handlers) apiTokensPage(c echo.Context, status int, created, errMsg string) error {
	p := principal(c)
	ts, err := h.RT.TokenList(ctx(c), p)
	if err != nil {
		return err
	}
	rows := make([]pages.APITokenRow, 0, len(ts))
	for _, t := range ts {
		row := pages.APITokenRow{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Created: isoTime(t.CreatedAt),
			Expires: isoTime(t.ExpiresAt), LastUsed: isoTimePtr(t.LastUsedAt), Narrowed: t.Narrowed, Tools: t.Tools}
		for _, perm := range t.Permissions {
			verb, scope, _ := strings.Cut(perm, " ")
			if sc, err := runtime.ParseScope(scope); err == nil {
				scope = h.RT.ShowScope(ctx(c), sc)
			}
			row.Permissions = append(row.Permissions, verb+" "+scope)
		}
		rows = append(rows, row)
	}
	var held []pages.VerbGroup
	for _, g := range verbGroups() {
		var vs []string
		for _, v := range g.Verbs {
			if p.Can(v) {
				vs = append(vs, v)
			}
		}
		if len(vs) > 0 {
			held = append(held, pages.VerbGroup{Noun: g.Noun, Verbs: vs})
		}
	}
	form := pages.TokenForm{Groups: held, Scopes: h.RT.ScopeChoices(ctx(c), p), Expires: "30d"}
	if errMsg != "" {
		// A refused form comes back as it was typed.
		form.Name, form.Expires, form.Scope, form.Tools = c.FormValue("name"), c.FormValue("expires"), c.FormValue("scope"), c.FormValue("tools")
		form.Checked = map[string]bool{}
		if params, err := c.FormParams(); err == nil {
			for _, v := range params["permissions"] {
				form.Checked[v] = true
			}
		}
	}
	return render(c, status, pages.APITokens(h.shell(c, "API tokens", "tokens"), rows, form, created, errMsg))
}

// tokenFormPermissions are the checked verbs, each in the scope chosen.
func tokenFormPermissions(c echo.Context) []string {
	form, _ := c.FormParams()
	scope := strings.TrimSpace(c.FormValue("scope"))
	if scope == "" {
		scope = "*"
	}
	var out []string
	for _, v := range form["permissions"] {
		out = append(out, strings.TrimSpace(v)+" "+scope)
	}
	return out
}
