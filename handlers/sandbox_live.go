package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// portsListTimeout bounds how long one render of the Sandboxes table waits
// for its running sandboxes' agents to list their ports, all rows together.
const portsListTimeout = time.Second

const portsDeadlineKey = "subako.portsDeadline"

// sandboxPorts lists what listens inside a running sandbox for its row.
func (h *Handlers) sandboxPorts(c echo.Context, p runtime.Principal, s runtime.SandboxView) pages.SandboxPorts {
	if s.State != "running" {
		return pages.SandboxPorts{}
	}
	// A live table renders again on the same request: a passed deadline
	// starts a new one.
	deadline, ok := c.Get(portsDeadlineKey).(time.Time)
	if !ok || time.Now().After(deadline) {
		deadline = time.Now().Add(portsListTimeout)
		c.Set(portsDeadlineKey, deadline)
	}
	cx, cancel := context.WithDeadline(ctx(c), deadline)
	defer cancel()
	v := pages.SandboxPorts{Running: true, CanPreview: p.Can("Sandbox.port")}
	for _, lp := range h.RT.SandboxPorts(cx, p, s.ID) {
		v.Ports = append(v.Ports, pages.SandboxPort{Port: lp.Port, Address: lp.Address})
	}
	return v
}

// pushOutput sends the session's live exec output when ev is about it
// (true: handled, no full update needed). The person's browser session is
// read again first; when it is gone, the full update that follows ends
// the stream.
func (h *Handlers) pushOutput(c echo.Context, out *sseStream, sid, id string, ev runtime.Event) bool {
	if ev.Kind != "call_output" {
		return false
	}
	p, err := h.RT.AuthenticateSession(ctx(c), sid)
	if err != nil {
		return false
	}
	var v pages.SessionOutput
	for _, o := range h.RT.SessionLiveOutput(p, id) {
		v.Calls = append(v.Calls, pages.SessionOutputCall{CallID: o.CallID, Grant: o.Grant, Command: o.Command,
			Text: o.Text, Bytes: o.Bytes, Cut: o.Cut})
	}
	if err := out.send(ctx(c), "output", pages.SessionOutputView(v)); err != nil {
		return false
	}
	_ = http.NewResponseController(out.w).Flush()
	return true
}
