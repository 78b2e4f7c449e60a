package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/views/pages"
)

// Agent shows an agent and its versions.
func (h *Handlers) Agent(c echo.Context) error {
	p := principal(c)
	a, err := h.RT.AgentGet(ctx(c), p, c.Param("agent"))
	if err != nil {
		return err
	}
	vs, err := h.RT.VersionList(ctx(c), p, a.ID)
	if err != nil {
		return err
	}
	view := pages.AgentPage{ID: a.ID, Name: a.Name, Description: a.Description, CanEdit: p.Can("Agent.update"),
		Versions: versionRows(vs, ""), Form: pages.AgentForm{Name: a.Name, Description: a.Description},
		DeleteRefusal: h.RT.AgentDeleteRefusal(ctx(c), p, a.ID)}
	return render(c, http.StatusOK, pages.Agent(h.shell(c, a.Name, "agents"), view))
}

func versionRows(vs []runtime.VersionView, current string) []pages.VersionRow {
	rows := make([]pages.VersionRow, 0, len(vs))
	for _, v := range vs {
		row := pages.VersionRow{ID: v.ID, Number: v.Number, State: v.State, Created: isoTime(v.CreatedAt), Current: v.ID == current}
		if v.PublishedAt != nil {
			row.Published = isoTime(*v.PublishedAt)
		}
		rows = append(rows, row)
	}
	return rows
}

// UpdateAgent saves an agent's name and description.
func (h *Handlers) UpdateAgent(c echo.Context) error {
	name, desc := c.FormValue("name"), c.FormValue("description")
	_, err := h.RT.AgentUpdate(ctx(c), principal(c), runtime.AgentInput{Agent: c.Param("agent"), Name: &name, Description: &desc})
	if err != nil {
		return h.flashError(c, err, "/agents/"+c.Param("agent"))
	}
	h.flash(c, "ok", "Saved.")
	return redirect(c, "/agents/"+c.Param("agent"))
}

// DeleteAgent deletes an agent and its versions.
func (h *Handlers) DeleteAgent(c echo.Context) error {
	if err := h.RT.AgentDelete(ctx(c), principal(c), c.Param("agent")); err != nil {
		return h.flashError(c, err, "/agents/"+c.Param("agent"))
	}
	h.flash(c, "ok", "Agent deleted.")
	return redirect(c, "/agents")
}

// CreateVersion makes a draft, empty or from another version.
func (h *Handlers) CreateVersion(c echo.Context) error {
	v, err := h.RT.VersionCreate(ctx(c), principal(c), runtime.VersionCreateInput{Agent: c.Param("agent"), From: c.FormValue("from")})
	if err != nil {
		return h.flashError(c, err, "/agents/"+c.Param("agent"))
	}
	h.flash(c, "ok", fmt.Sprintf("Draft version %d created.", v.Number))
	return redirect(c, "/versions/"+v.ID)
}

// versionPage gathers everything the editor shows.
func (h *Handlers) versionPage(c echo.Context, id string) (pages.VersionPage, error) {
	p := principal(c)
	v, err := h.RT.VersionGet(ctx(c), p, id)
	if err != nil {
		return pages.VersionPage{}, err
	}
	a, err := h.RT.AgentGet(ctx(c), p, v.Agent)
	if err != nil {
		return pages.VersionPage{}, err
	}
	ts, err := h.RT.VersionTools(ctx(c), p, id)
	if err != nil {
		return pages.VersionPage{}, err
	}
	history, err := h.RT.VersionList(ctx(c), p, v.Agent)
	if err != nil {
		return pages.VersionPage{}, err
	}
	view := pages.VersionPage{AgentID: a.ID, AgentName: a.Name, ID: v.ID, Number: v.Number, State: v.State,
		Draft: v.State == runtime.StateDraft, CanEdit: p.Can("Version.update"), CanStart: p.Can("Session.create"), Sections: grantSections(v.Parsed()),
		History: versionRows(history, v.ID)}
	if v.PublishedAt != nil {
		view.Published = isoTime(*v.PublishedAt)
	}
	view.Pins = h.pinsCard(c, v)
	view.ToolsAs = toolsAsCard(v, view.Draft && view.CanEdit)
	for _, t := range ts {
		view.Tools = append(view.Tools, pages.ToolRow{Name: t.Name, Kind: t.Kind, Grant: t.Grant, Tool: t.Tool, Policy: t.Policy,
			Source: t.PolicySource, Description: t.Description, Schema: schemaText(t.InputSchema), Offered: t.Offered, Discovered: t.Discovered,
			Rules: argRuleLines(t.Rules)})
		if view.ToolsAs.Value == "code" && t.Offered {
			view.Tools[len(view.Tools)-1].Code = runtime.CodeExpr(t.Name)
		}
	}
	return view, nil
}

// maxShownSchema is the largest input schema the editor prints in full; a
// bigger one is summarized, so a server with huge schemas cannot bloat the page.
const maxShownSchema = 16 << 10

// schemaText is an input schema indented for reading, or a note on its size.
func schemaText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if len(raw) > maxShownSchema {
		return fmt.Sprintf("(%d KiB: read it with Version.tools)", (len(raw)+1023)/1024)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// Version is the version editor.
func (h *Handlers) Version(c echo.Context) error {
	view, err := h.versionPage(c, c.Param("version"))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, pages.Version(h.shell(c, fmt.Sprintf("%s · Version %d", view.AgentName, view.Number), "agents"), view))
}

// PublishVersion publishes a draft.
func (h *Handlers) PublishVersion(c echo.Context) error {
	v, err := h.RT.VersionPublish(ctx(c), principal(c), c.Param("version"))
	if err != nil {
		return h.flashError(c, err, "/versions/"+c.Param("version"))
	}
	h.flash(c, "ok", fmt.Sprintf("Version %d published.", v.Number))
	return redirect(c, "/versions/"+v.ID)
}

// ExportVersion downloads the version's agent config JSON.
func (h *Handlers) ExportVersion(c echo.Context) error {
	b, v, err := h.RT.VersionExport(ctx(c), principal(c), c.Param("version"))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="agent-%s-v%d.json"`, v.Agent, v.Number))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// ImportVersion replaces a draft's config with pasted or uploaded JSON.
func (h *Handlers) ImportVersion(c echo.Context) error {
	text := c.FormValue("config")
	if fh, err := c.FormFile("file"); err == nil && fh.Size > 0 {
		f, err := fh.Open()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
		f.Close()
		if err != nil {
			return err
		}
		text = string(b)
	}
	_, err := h.RT.VersionUpdate(ctx(c), principal(c), c.Param("version"), []byte(text))
	e, ok := runtime.AsError(err)
	if !ok || e.Kind != runtime.KindInvalid {
		if err != nil {
			return h.flashError(c, err, "/versions/"+c.Param("version"))
		}
		h.flash(c, "ok", "Config imported.")
		return redirect(c, "/versions/"+c.Param("version"))
	}
	view, verr := h.versionPage(c, c.Param("version"))
	if verr != nil {
		return verr
	}
	view.ImportText = text
	for _, fe := range e.Fields {
		view.ImportErrors = append(view.ImportErrors, strings.TrimPrefix(fe.Field+": "+fe.Detail, ": "))
	}
	if len(view.ImportErrors) == 0 {
		view.ImportErrors = []string{e.Error()}
	}
	return render(c, http.StatusUnprocessableEntity, pages.Version(h.shell(c, "Import", "agents"), view))
}

// DiffVersion compares a version against another of the same agent.
func (h *Handlers) DiffVersion(c echo.Context) error {
	view, err := h.versionPage(c, c.Param("version"))
	if err != nil {
		return err
	}
	against := c.QueryParam("against")
	var choices []pages.VersionRow
	for _, r := range view.History {
		if r.ID != view.ID {
			choices = append(choices, r)
		}
	}
	if against == "" && len(choices) > 0 {
		against = choices[0].ID
		for _, r := range choices {
			if r.Number < view.Number {
				against = r.ID
				break
			}
		}
	}
	var rows []pages.DiffRow
	if against != "" {
		changes, err := h.RT.VersionDiff(ctx(c), principal(c), view.ID, against)
		if err != nil {
			return err
		}
		rows = diffRows(changes)
		effects, err := h.RT.VersionToolEffects(ctx(c), principal(c), view.ID, against)
		if err != nil {
			return err
		}
		for _, e := range effects {
			view.Effects = append(view.Effects, pages.EffectRow{Name: e.Name, Before: e.Before, After: e.After})
		}
	}
	return render(c, http.StatusOK, pages.Diff(h.shell(c, "Compare versions", "agents"), view, against, choices, rows))
}

func diffRows(changes []tools.Change) []pages.DiffRow {
	var rows []pages.DiffRow
	for _, ch := range changes {
		row := pages.DiffRow{Kind: ch.Kind, Name: ch.Name, Op: ch.Op}
		for _, f := range ch.Fields {
			row.Fields = append(row.Fields, pages.DiffField{Field: f.Field, Before: f.Before, After: f.After})
		}
		rows = append(rows, row)
	}
	return rows
}
