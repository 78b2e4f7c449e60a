package handlers

import (
	"github.com/labstack/echo/v4"
)

// LoadExample loads the example agent and redirects to its session, whose
// token waits there to be shown once; a second load, or a reload, creates
// nothing and lands on the same session.
func (h *Handlers) LoadExample(c echo.Context) error {
	ex, err := h.RT.ExampleLoad(ctx(c), principal(c))
	if err != nil {
		return h.flashError(c, err, "/")
	}
	switch {
	case ex.Created:
		h.flash(c, "ok", "The example agent is loaded: its session below offers a skill, a sandbox, ask_user and a function, if one is installed.")
	case ex.Token == "":
		h.flash(c, "ok", "The example agent was already loaded: this is its session.")
	}
	if ex.Token != "" {
		h.reveal(c, "session:"+ex.Session, ex.Token)
	}
	return redirect(c, "/sessions/"+ex.Session)
}
