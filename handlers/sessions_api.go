package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// APIVaultList is Vault.list.
func (h *Handlers) APIVaultList(c echo.Context) error {
	out, err := h.RT.VaultList(ctx(c), principal(c))
	return answer(c, http.StatusOK, out, err)
}

// APIVaultCreate is Vault.create.
func (h *Handlers) APIVaultCreate(c echo.Context) error {
	var in runtime.VaultInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.VaultCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APIVaultGet is Vault.get.
func (h *Handlers) APIVaultGet(c echo.Context) error {
	out, err := h.RT.VaultGet(ctx(c), principal(c), c.Param("vault"))
	return answer(c, http.StatusOK, out, err)
}

// APIVaultDelete is Vault.delete.
func (h *Handlers) APIVaultDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.VaultDelete(ctx(c), principal(c), c.Param("vault")))
}

// APICredentialList is Credential.list.
func (h *Handlers) APICredentialList(c echo.Context) error {
	out, err := h.RT.CredentialList(ctx(c), principal(c), c.Param("vault"))
	return answer(c, http.StatusOK, out, err)
}

// APICredentialSet is Credential.set; the secret is write-only.
func (h *Handlers) APICredentialSet(c echo.Context) error {
	var in runtime.CredentialInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Vault = c.Param("vault")
	out, err := h.RT.CredentialSet(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}

// APICredentialDelete is Credential.delete.
func (h *Handlers) APICredentialDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.CredentialDelete(ctx(c), principal(c), c.Param("vault"), c.Param("credential")))
}

// APISessionList is Session.list.
func (h *Handlers) APISessionList(c echo.Context) error {
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	f := runtime.SessionFilter{Agent: c.QueryParam("agent"), State: c.QueryParam("state"), Cursor: c.QueryParam("cursor"), Limit: limit}
	pg, err := h.RT.SessionListPage(ctx(c), principal(c), f, 200)
	return answerList(c, pg.Items, pg.PageLinks, err)
}

// APISessionCreate is Session.create; the answer carries the session token once.
func (h *Handlers) APISessionCreate(c echo.Context) error {
	var in runtime.SessionCreateInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	out, err := h.RT.SessionCreate(ctx(c), principal(c), in)
	return answer(c, http.StatusCreated, out, err)
}

// APISessionGet is Session.get.
func (h *Handlers) APISessionGet(c echo.Context) error {
	out, err := h.RT.SessionGet(ctx(c), principal(c), c.Param("session"))
	return answer(c, http.StatusOK, out, err)
}

// APISessionEnd is Session.end.
func (h *Handlers) APISessionEnd(c echo.Context) error {
	out, err := h.RT.SessionEnd(ctx(c), principal(c), c.Param("session"))
	return answer(c, http.StatusOK, out, err)
}

// APISessionTools is Session.tools; ?refresh=true re-discovers MCP servers.
func (h *Handlers) APISessionTools(c echo.Context) error {
	out, err := h.RT.SessionTools(ctx(c), principal(c), c.Param("session"), c.QueryParam("refresh") == "true")
	return answer(c, http.StatusOK, out, err)
}

// APIToolCallCreate is ToolCall.create: 200 with the finished call, or 202
// while it waits (for an approver, a client).
func (h *Handlers) APIToolCallCreate(c echo.Context) error {
	var in runtime.ToolCallInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Session = c.Param("session")
	if in.Model == "" {
		// The model may come as a header, as on the MCP endpoint.
		in.Model = headerModel(c)
	}
	out, err := h.RT.ToolCallCreate(ctx(c), principal(c), in)
	if err != nil {
		return err
	}
	if out.Open() {
		return c.JSON(http.StatusAccepted, out)
	}
	return c.JSON(http.StatusOK, out)
}

// APIToolCallGet is ToolCall.get.
func (h *Handlers) APIToolCallGet(c echo.Context) error {
	out, err := h.RT.ToolCallGet(ctx(c), principal(c), c.Param("call"))
	return answer(c, http.StatusOK, out, err)
}

// APIToolCallList is ToolCall.list.
func (h *Handlers) APIToolCallList(c echo.Context) error {
	out, err := h.RT.ToolCallList(ctx(c), principal(c), c.Param("session"))
	return answer(c, http.StatusOK, out, err)
}

// APIToolCallComplete is ToolCall.complete.
func (h *Handlers) APIToolCallComplete(c echo.Context) error {
	var in runtime.CompleteInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Call = c.Param("call")
	out, err := h.RT.ToolCallComplete(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}

// APIClientConnect is Client.connect.
func (h *Handlers) APIClientConnect(c echo.Context) error {
	var in runtime.ClientInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Session, in.Client = c.Param("session"), c.Param("client")
	out, err := h.RT.ClientConnect(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}

// APIClientCallNext is ClientCall.next: a long poll, ?wait=seconds (at most 60).
func (h *Handlers) APIClientCallNext(c echo.Context) error {
	wait := 30 * time.Second
	if w := c.QueryParam("wait"); w != "" {
		secs, err := strconv.ParseFloat(w, 64)
		if err != nil || secs < 0 {
			return &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_wait", Title: "Invalid query", Field: "wait",
				Detail: "wait must be a number of seconds between 0 and 60"}
		}
		wait = time.Duration(secs * float64(time.Second))
	}
	out, err := h.RT.ClientCallNext(ctx(c), principal(c), c.Param("session"), c.Param("client"), wait)
	return answer(c, http.StatusOK, out, err)
}

// APIApprovalList is Approval.list: ?state=&agent=&session=&grant=&tool=&q=&order=&limit=.
func (h *Handlers) APIApprovalList(c echo.Context) error {
	f, err := queueFilter(c)
	if err != nil {
		return err
	}
	q, err := h.RT.ApprovalQueue(ctx(c), principal(c), f)
	return answerList(c, q.Items, q.Links, err)
}

// APIApprovalApprove is Approval.approve.
func (h *Handlers) APIApprovalApprove(c echo.Context) error {
	var in runtime.DecisionInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Approval = c.Param("approval")
	out, err := h.RT.ApprovalApprove(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}

// APIApprovalDeny is Approval.deny.
func (h *Handlers) APIApprovalDeny(c echo.Context) error {
	var in runtime.DecisionInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	in.Approval = c.Param("approval")
	out, err := h.RT.ApprovalDeny(ctx(c), principal(c), in)
	return answer(c, http.StatusOK, out, err)
}
