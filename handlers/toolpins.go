package handlers

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// FetchGrantTools is the MCP grant form's Fetch tools: Version.fetchTools
// with the form's URL and vault, then the form again, as filled in, with the
// tools found (or the reason under the URL field).
func (h *Handlers) FetchGrantTools(c echo.Context) error {
	kind, current := c.Param("kind"), c.Param("name")
	f, err := h.grantForm(c, kind, current)
	if err != nil {
		return err
	}
	if f.Published {
		return h.publishedForm(c, f)
	}
	readForm(c, &f)
	f.Vault = c.FormValue("vault")
	_, err = h.RT.VersionFetchTools(ctx(c), principal(c), f.VersionID, runtime.FetchToolsInput{URL: f.URL, Vault: f.Vault, Grant: f.Name})
	status := http.StatusOK
	if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindInvalid {
		f.Errors[formField(e.Field)] = e.Detail
		status = http.StatusUnprocessableEntity
	} else if err != nil {
		return err
	}
	h.fillChoices(c, &f) // shows what was kept for the URL (fillFetched)
	return render(c, status, pages.GrantFormPage(h.shell(c, f.Title, "agents"), f))
}

func (h *Handlers) vaultOptions(c echo.Context) []pages.Option {
	var out []pages.Option
	if vs, err := h.RT.VaultList(ctx(c), principal(c)); err == nil {
		for _, v := range vs {
			out = append(out, pages.Option{Value: v.ID, Label: v.Name})
		}
	}
	return out
}

// fillFetched adds the vaults to choose from and what was fetched for the
// form's URL.
func (h *Handlers) fillFetched(c echo.Context, f *pages.GrantForm) {
	f.Vaults = h.vaultOptions(c)
	pins, err := h.RT.VersionPinned(ctx(c), principal(c), f.VersionID)
	if err != nil {
		return
	}
	if l, ok := pins[f.URL]; ok && f.URL != "" {
		box := &pages.FetchedBox{At: isoTime(l.FetchedAt), Tools: []string{}}
		for _, t := range l.Tools {
			box.Tools = append(box.Tools, t.Name)
		}
		f.Fetched, f.KnownTools = box, box.Tools
	}
}

// FetchVersionTools is the version page's Fetch now: Version.fetchTools for
// one grant's URL, then the page, whose drift now compares with that list.
func (h *Handlers) FetchVersionTools(c echo.Context) error {
	id := c.Param("version")
	got, err := h.RT.VersionFetchTools(ctx(c), principal(c), id, runtime.FetchToolsInput{URL: c.FormValue("url"), Vault: c.FormValue("vault"), Grant: c.FormValue("grant")})
	if err != nil {
		return h.flashError(c, err, "/versions/"+id+"#pinned-tools")
	}
	h.flash(c, "ok", fmt.Sprintf("Fetched %d tools from %s.", len(got.Tools), c.FormValue("grant")))
	return redirect(c, "/versions/"+id+"#pinned-tools")
}

// DraftWithTools is "New draft with these tools".
func (h *Handlers) DraftWithTools(c echo.Context) error {
	v, err := h.RT.VersionDraftWithTools(ctx(c), principal(c), c.Param("version"))
	if err != nil {
		return h.flashError(c, err, "/versions/"+c.Param("version"))
	}
	h.flash(c, "ok", fmt.Sprintf("Draft version %d made with the tools the servers list now: publish it to pin them.", v.Number))
	return redirect(c, "/versions/"+v.ID)
}

// pinsCard is the version page's Pinned tools card.
func (h *Handlers) pinsCard(c echo.Context, v runtime.VersionView) pages.PinsCard {
	p := principal(c)
	card := pages.PinsCard{VersionID: v.ID, Draft: v.State == runtime.StateDraft, CanEdit: p.Can("Version.fetchTools")}
	drift, err := h.RT.VersionDrift(ctx(c), p, v.ID)
	if err != nil {
		return card
	}
	for _, d := range drift {
		g := pages.PinGrant{Grant: d.Grant, URL: d.URL, Pinned: d.Pinned}
		if d.CheckedAt != nil {
			g.Checked = isoTime(*d.CheckedAt)
		}
		for _, ch := range d.Changes {
			g.Changes = append(g.Changes, pages.PinChange{Tool: ch.Tool, Change: ch.Change, Fields: ch.Fields, Details: ch.Details})
		}
		card.Grants = append(card.Grants, g)
	}
	card.Vaults = h.vaultOptions(c)
	return card
}

// APIVersionFetchTools is Version.fetchTools.
func (h *Handlers) APIVersionFetchTools(c echo.Context) error {
	var in runtime.FetchToolsInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.VersionFetchTools(ctx(c), principal(c), c.Param("version"), in)
	return answer(c, http.StatusOK, out, err)
}

// APIVersionDrift is Version.drift.
func (h *Handlers) APIVersionDrift(c echo.Context) error {
	out, err := h.RT.VersionDrift(ctx(c), principal(c), c.Param("version"))
	return answer(c, http.StatusOK, out, err)
}
