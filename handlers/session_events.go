package handlers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// The session page's event stream: a comment every sseHeartbeat keeps proxies
// from closing an idle stream and shows when the client has gone; sseSettle
// lets a burst of events (queued, running, succeeded) become one update.
const (
	sseHeartbeat = 15 * time.Second
	sseSettle    = 50 * time.Millisecond
)

// SessionEvents streams the session page's live parts as server-sent events,
// for htmx's SSE extension: each event's data is the HTML of the component
// the page embeds. Every update re-reads the person's browser session, so a
// person removed or signed out stops receiving at the next change.
func (h *Handlers) SessionEvents(c echo.Context) error {
	id := c.Param("session")
	if _, err := h.RT.SessionGet(ctx(c), principal(c), id); err != nil {
		return err
	}
	events, stop := h.RT.Subscribe()
	defer stop()
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "text/event-stream")
	hd.Set(echo.HeaderCacheControl, "no-store")
	c.Response().WriteHeader(http.StatusOK)
	out := &sseStream{w: c.Response(), last: map[string]string{}}
	sid, _ := c.Get(webSIDKey).(string)
	beat := time.NewTicker(sseHeartbeat)
	defer beat.Stop()
	for {
		// Sent once on connecting too: a change between the page's render and
		// the stream's start would otherwise be missed.
		if err := h.pushSession(c, out, sid, id); err != nil {
			if e, ok := runtime.AsError(err); !ok || e.Kind == runtime.KindInternal {
				h.Log.Warn("session events: stream ended", "session", id, "err", err)
			}
			return nil
		}
		if !out.await(ctx(c), events, beat.C, func(ev runtime.Event) bool { return ev.SessionID == id }) {
			return nil
		}
	}
}

func (h *Handlers) pushSession(c echo.Context, out *sseStream, sid, id string) error {
	p, err := h.RT.AuthenticateSession(ctx(c), sid)
	if err != nil {
		return err
	}
	live, err := h.sessionLive(ctx(c), p, id)
	if err != nil {
		return err
	}
	parts := []struct {
		name string
		comp templ.Component
	}{
		{"head", pages.SessionHeadView(live.head)},
		{"pending", pages.SessionPendingView(live.pending)},
		{"calls", pages.SessionCallLog(live.calls)},
		{"rules", pages.SessionRulesView(live.rules)},
	}
	for _, part := range parts {
		if err := out.send(ctx(c), part.name, part.comp); err != nil {
			return err
		}
	}
	return http.NewResponseController(out.w).Flush()
}

// sseStream writes events to one client, skipping a part whose HTML has not
// changed since it was last sent, so a form being typed into is not reset.
type sseStream struct {
	w    http.ResponseWriter
	last map[string]string
}

func (s *sseStream) send(cx context.Context, name string, comp templ.Component) error {
	var b strings.Builder
	if err := comp.Render(cx, &b); err != nil {
		return fmt.Errorf("handlers: render %s: %w", name, err)
	}
	html := b.String()
	if prev, sent := s.last[name]; sent && prev == html {
		return nil
	}
	s.last[name] = html
	var ev strings.Builder
	ev.WriteString("event: " + name + "\n")
	// A data line ends at any line break; each line of the HTML needs its own.
	html = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(html)
	for line := range strings.SplitSeq(html, "\n") {
		ev.WriteString("data: " + line + "\n")
	}
	ev.WriteString("\n")
	_, err := io.WriteString(s.w, ev.String())
	return err
}

// await waits for an event that matters to this stream, sending heartbeats
// meanwhile; it reports false when the client has gone or the server stops.
func (s *sseStream) await(cx context.Context, events <-chan runtime.Event, beat <-chan time.Time, matters func(runtime.Event) bool) bool {
	for {
		select {
		case <-cx.Done():
			return false
		case <-beat:
			if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
				return false
			}
			if http.NewResponseController(s.w).Flush() != nil {
				return false
			}
		case ev, ok := <-events:
			if !ok {
				return false
			}
			if matters(ev) {
				return settle(cx, events)
			}
		}
	}
}

func settle(cx context.Context, events <-chan runtime.Event) bool {
	t := time.NewTimer(sseSettle)
	defer t.Stop()
	for {
		select {
		case <-cx.Done():
			return false
		case <-t.C:
			return true
		case _, ok := <-events:
			if !ok {
				return false
			}
		}
	}
}
