package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/views/pages"
)

func toolsAsCard(v runtime.VersionView, editable bool) pages.ToolsAsCard {
	value := v.Parsed().ToolsAs
	if value == "" {
		value = tools.ToolsFlat
	}
	return pages.ToolsAsCard{VersionID: v.ID, Value: value, Editable: editable}
}

// SetToolsAs saves a draft's "Tools as" (flat or code). htmx gets the card
// back, saved or with the refusal under the choice; a plain form post is
// redirected to the editor.
func (h *Handlers) SetToolsAs(c echo.Context) error {
	id, value := c.Param("version"), c.FormValue("tools_as")
	v, err := h.RT.VersionSetToolsAs(ctx(c), principal(c), id, value)
	e, shown := formError(err)
	if err != nil && !shown {
		return err
	}
	if !isHTMX(c) {
		if err != nil {
			return h.flashError(c, err, "/versions/"+id)
		}
		h.flash(c, "ok", "Saved: tools as "+toolsAsCard(v, true).Value+".")
		return redirect(c, "/versions/"+id)
	}
	if err != nil {
		card := pages.ToolsAsCard{VersionID: id, Value: value, Editable: true, Error: e.Error()}
		if len(e.Fields) > 0 {
			card.Error = e.Fields[0].Detail
		}
		return render(c, statusOf(e.Kind), pages.ToolsAs(card))
	}
	card := toolsAsCard(v, true)
	card.Saved = true
	return render(c, http.StatusOK, pages.ToolsAs(card))
}
