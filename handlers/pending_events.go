package handlers

import (
	"net/http"
	"net/url"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/layout"
)

// pendingEventsPath is the navigation badge's stream, which every signed-in
// page opens.
const pendingEventsPath = "/approvals/pending/events"

// pendingEvents is the badge's stream URL for a page that shows n pending, or
// "" for a viewer who cannot list approvals. The page's badge is its seed, so
// a stream that connects to an unchanged count sends nothing.
func pendingEvents(c echo.Context, p runtime.Principal, n int) string {
	if !p.Can("Approval.list") {
		return ""
	}
	seen := liveSeen(ctx(c), map[string]templ.Component{"pending": layout.PendingBadge(n)})
	return pendingEventsPath + "?" + url.Values{"seen": {seen}}.Encode()
}

// PendingEvents streams the navigation's approvals badge as server-sent
// events: on connecting, then whenever an approval or a session (whose end
// expires its approvals) changes. Each update re-reads the person's browser
// session, so a person signed out, removed or no longer allowed stops
// receiving at the next change (of approvals, sessions, or who may do what).
func (h *Handlers) PendingEvents(c echo.Context) error {
	// One who cannot list approvals (a viewer narrowed, access none
	// without a seat) is refused before the stream opens, naming why.
	if p := principal(c); !p.Can("Approval.list") {
		return &runtime.Error{Kind: runtime.KindForbidden, Code: "permission_denied", Title: "Permission denied",
			Detail: p.Label + " may not Approval.list", MissingPermission: "Approval.list"}
	}
	// A change to who may do what wakes the stream too: a person
	// removed, unseated or narrowed past Approval.list stops here.
	matters := func(ev runtime.Event) bool {
		return ev.Kind == "approval" || ev.Kind == "session" || ev.Kind == runtime.EventAccess
	}
	events, stop := h.RT.Subscribe(matters)
	defer stop()
	out := openSSE(c)
	sid, _ := c.Get(webSIDKey).(string)
	beat := time.NewTicker(sseHeartbeat)
	defer beat.Stop()
	p := principal(c)
	for {
		if err := out.send(ctx(c), "pending", layout.PendingBadge(h.RT.PendingApprovals(ctx(c), p))); err != nil {
			return nil // the client has gone
		}
		if http.NewResponseController(out.w).Flush() != nil {
			return nil
		}
		if !out.await(ctx(c), events, beat.C, matters) {
			return nil
		}
		var err error
		if p, err = h.RT.AuthenticateSession(ctx(c), sid); err != nil || !p.Can("Approval.list") {
			return nil
		}
	}
}
