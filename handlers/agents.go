package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

func (h *Handlers) agentsPage(c echo.Context, status int, f pages.AgentForm) error {
	p := principal(c)
	agents, err := h.RT.AgentList(ctx(c), p)
	if err != nil {
		return err
	}
	rows := make([]pages.AgentRow, 0, len(agents))
	for _, a := range agents {
		rows = append(rows, pages.AgentRow{ID: a.ID, Name: a.Name, Description: a.Description, Updated: isoTime(a.UpdatedAt)})
	}
	return render(c, status, pages.AgentsPage(h.shell(c, "Agents", "agents"), rows, f, p.Can("Agent.create")))
}

// Agents lists agents with a form to create one.
func (h *Handlers) Agents(c echo.Context) error {
	return h.agentsPage(c, http.StatusOK, pages.AgentForm{})
}

// CreateAgent creates an agent from the form.
func (h *Handlers) CreateAgent(c echo.Context) error {
	name, desc := c.FormValue("name"), c.FormValue("description")
	a, err := h.RT.AgentCreate(ctx(c), principal(c), runtime.AgentInput{Name: &name, Description: &desc})
	if e, ok := formError(err); ok {
		return h.agentsPage(c, statusOf(e.Kind), formErrors(name, desc, e))
	}
	if err != nil {
		return err
	}
	h.flash(c, "ok", "Agent "+a.Name+" created.")
	return redirect(c, "/agents/"+a.ID)
}

func formErrors(name, desc string, e *runtime.Error) pages.AgentForm {
	f := pages.AgentForm{Name: name, Description: desc, Errors: map[string]string{}}
	for _, fe := range e.Fields {
		f.Errors[fe.Field] = fe.Detail
	}
	if len(f.Errors) == 0 {
		f.Error = e.Error()
	}
	return f
}
