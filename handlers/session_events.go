package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// The session page's event stream: a comment every sseHeartbeat keeps proxies
// from closing an idle stream and shows when the client has gone. The first
// event after a quiet spell is sent at once; events that follow within
// sseSettle of an update (queued, running, succeeded) become one more update
// at the end of that window, so a burst costs at most one update per window.
const (
	sseHeartbeat = 15 * time.Second
	sseSettle    = 50 * time.Millisecond
	// sseResyncSettle spaces the re-reads a page makes because it fell
	// behind (runtime.Event.Resync).
	sseResyncSettle = time.Second
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
	// The session's own events, and changes to who may do what.
	events, stop := h.RT.Subscribe(func(ev runtime.Event) bool { return ev.Kind == runtime.EventAccess || ev.SessionID == id })
	defer stop()
	out := openSSE(c)
	sid, _ := c.Get(webSIDKey).(string)
	beat := time.NewTicker(sseHeartbeat)
	defer beat.Stop()
	var calls liveList
	for {
		// Checked once on connecting too: a change between the page's render
		// and the stream's start would otherwise be missed.
		if err := h.pushSession(c, out, &calls, sid, id); err != nil {
			if e, ok := runtime.AsError(err); !ok || e.Kind == runtime.KindInternal {
				h.Log.Warn("session events: stream ended", "session", id, "err", err)
			}
			return nil
		}
		// Live exec output is its own small part (sandbox_live.go).
		h.pushOutput(c, out, sid, id, runtime.Event{Kind: "call_output"})
		// A change to who may do what re-reads the page as the person now
		// stands: refused, the stream ends.
		if !out.await(ctx(c), events, beat.C, func(ev runtime.Event) bool {
			return ev.Kind == runtime.EventAccess || (ev.SessionID == id && !h.pushOutput(c, out, sid, id, ev))
		}) {
			return nil
		}
	}
}

func (h *Handlers) pushSession(c echo.Context, out *sseStream, calls *liveList, sid, id string) error {
	p, err := h.RT.AuthenticateSession(ctx(c), sid)
	if err != nil {
		return err
	}
	live, err := h.sessionLive(ctx(c), p, id)
	if err != nil {
		return err
	}
	parts := live.parts()
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		if name == "calls" {
			continue // a call at a time, below
		}
		if err := out.send(ctx(c), name, parts[name]); err != nil {
			return err
		}
	}
	if err := pushCalls(ctx(c), out, calls, live.calls); err != nil {
		return err
	}
	return http.NewResponseController(out.w).Flush()
}

// parts are the page's live parts by their event names.
func (l sessionLive) parts() map[string]templ.Component {
	return map[string]templ.Component{
		"head":    pages.SessionHeadView(l.head),
		"pending": pages.SessionPendingView(l.pending),
		"calls":   pages.SessionCallLog(l.calls),
		"rules":   pages.SessionRulesView(l.rules),
	}
}

// sseStream writes events to one client, skipping a part whose HTML has not
// changed since it was last sent, so a form being typed into is not reset.
// It remembers each part by a hash of its HTML; a page seeds it with the
// hashes of what it rendered (liveSeen), so a stream that connects to an
// unchanged page sends nothing and swaps nothing under the person's pointer.
type sseStream struct {
	w    http.ResponseWriter
	last map[string]string
	// pushed is when the last update started: events within sseSettle of
	// it wait for the window's end and go out together.
	pushed time.Time
}

// openSSE answers c with an event stream at once (200, text/event-stream,
// never cached) for a page that rendered the parts in its "seen" query.
func openSSE(c echo.Context) *sseStream {
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "text/event-stream")
	hd.Set(echo.HeaderCacheControl, "no-store")
	c.Response().WriteHeader(http.StatusOK)
	return newSSEStream(c.Response(), c.QueryParam("seen"))
}

// newSSEStream starts a stream for a page that rendered the parts in seen
// ("at:unix,name:hash,…", from liveSeen; anything else is ignored). The
// hashes count only for a page rendered moments ago: the same URL serves
// every reconnect (the browser's, htmx's retry), and by then the page shows
// what later events swapped in, so a reconnect gets every part again.
func newSSEStream(w http.ResponseWriter, seen string) *sseStream {
	s := &sseStream{w: w, last: map[string]string{}}
	seeds := map[string]string{}
	fresh := false
	for pair := range strings.SplitSeq(seen, ",") {
		name, val, ok := strings.Cut(pair, ":")
		if !ok || name == "" || val == "" {
			continue
		}
		if name == "at" {
			at, err := strconv.ParseInt(val, 10, 64)
			fresh = err == nil && time.Since(time.Unix(at, 0)).Abs() < seenFor
			continue
		}
		seeds[name] = val
	}
	if fresh {
		s.last = seeds
	}
	return s
}

// seenFor is how long after a page's render its stream trusts what the page
// showed: long enough for the page to load and connect.
const seenFor = 10 * time.Second

// liveSeen renders the named parts as a page embeds them and returns the
// value of the events URL's seen parameter.
func liveSeen(cx context.Context, parts map[string]templ.Component) string {
	names := slices.Sorted(maps.Keys(parts))
	out := make([]string, 0, len(names)+1)
	out = append(out, "at:"+strconv.FormatInt(time.Now().Unix(), 10))
	for _, name := range names {
		var b strings.Builder
		if err := parts[name].Render(cx, &b); err != nil {
			continue // the stream will send this part on connecting
		}
		out = append(out, name+":"+htmlSum(b.String()))
	}
	return strings.Join(out, ",")
}

func htmlSum(html string) string {
	sum := sha256.Sum256([]byte(html))
	return hex.EncodeToString(sum[:8])
}

func (s *sseStream) send(cx context.Context, name string, comp templ.Component) error {
	var b strings.Builder
	if err := comp.Render(cx, &b); err != nil {
		return fmt.Errorf("handlers: render %s: %w", name, err)
	}
	html := b.String()
	sum := htmlSum(html)
	if prev, sent := s.last[name]; sent && prev == sum {
		return nil
	}
	s.last[name] = sum
	// A data line ends at any line break; each line of the HTML gets its own.
	return writeEvent(s.w, name, html)
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
			// A resync: events were lost, so whatever the page shows is
			// re-read, at most once a second (a page falls behind when
			// events come faster than it re-reads).
			if ev.Resync() {
				return s.settle(cx, events, sseResyncSettle)
			}
			if matters(ev) {
				return s.settle(cx, events, sseSettle)
			}
		}
	}
}

// settle lets an update go: at once when the last one is older than the
// window, else at the window's end. Either way the events already queued
// are taken first, as the re-read that follows covers them.
func (s *sseStream) settle(cx context.Context, events <-chan runtime.Event, window time.Duration) bool {
	if wait := window - time.Since(s.pushed); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
	window:
		for {
			select {
			case <-cx.Done():
				return false
			case <-t.C:
				break window
			case _, ok := <-events:
				if !ok {
					return false
				}
			}
		}
	}
	for n := len(events); n > 0; n-- {
		if _, ok := <-events; !ok {
			return false
		}
	}
	s.pushed = time.Now()
	return true
}
