package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/views/pages"
)

// filesTable reads the session's volume for the Files tab.
func (h *Handlers) filesTable(c echo.Context, p runtime.Principal, s runtime.SessionView) (pages.FilesTable, error) {
	l, err := h.RT.VolumeList(ctx(c), p, s.ID, "")
	if err != nil {
		return pages.FilesTable{}, err
	}
	t := pages.FilesTable{SessionID: s.ID, CanDelete: p.Can("Volume.delete"),
		Usage: fmt.Sprintf("%d of %d files · %s of %s", l.Count, l.Limits.MaxFiles, humanBytes(float64(l.TotalBytes)),
			humanBytes(float64(l.Limits.MaxTotalBytes)))}
	for _, f := range l.Files {
		t.Rows = append(t.Rows, pages.VolumeFileRow{Path: f.Path, Size: humanBytes(float64(f.Size)), Modified: isoTime(f.ModifiedAt),
			By: f.ModifiedBy, Preview: PreviewKind(f.Path)})
	}
	return t, nil
}

// SessionFiles is a session's Files tab: its volume, an upload form, a
// preview of one file (?preview=path), live as functions write.
func (h *Handlers) SessionFiles(c echo.Context) error {
	p := principal(c)
	s, err := h.RT.SessionGet(ctx(c), p, c.Param("session"))
	if err != nil {
		return err
	}
	t, err := h.filesTable(c, p, s)
	if err != nil {
		return err
	}
	v := pages.FilesView{SessionID: s.ID, SessionTitle: s.Title, Table: t, Ended: s.State != runtime.SessionActive,
		CanUpload: p.Can("Volume.put") && s.State == runtime.SessionActive}
	if want := c.QueryParam("preview"); want != "" {
		for _, r := range t.Rows {
			if r.Path == want {
				v.Preview = &r
				break
			}
		}
	}
	seen := liveSeen(ctx(c), map[string]templ.Component{"files": pages.FilesTableView(t)})
	v.EventsURL = "/sessions/" + url.PathEscape(s.ID) + "/files/events?" + url.Values{"seen": {seen}}.Encode()
	title := s.Title
	if title == "" {
		title = s.ID
	}
	return render(c, http.StatusOK, pages.FilesPage(h.shell(c, "Files · "+title, "sessions"), v))
}

// SessionFilesEvents streams the Files tab's list as server-sent events:
// on connecting, then whenever the volume changes (an upload, a delete, a
// function's write).
func (h *Handlers) SessionFilesEvents(c echo.Context) error {
	s, err := h.RT.SessionGet(ctx(c), principal(c), c.Param("session"))
	if err != nil {
		return err
	}
	matters := func(ev runtime.Event) bool { return ev.Kind == "volume" && ev.SessionID == s.ID }
	return h.streamPart(c, "files", matters, func(p runtime.Principal) (templ.Component, error) {
		t, err := h.filesTable(c, p, s)
		return pages.FilesTableView(t), err
	})
}

// streamPart streams one part of a page as server-sent events named name:
// read once on connecting, then again after each event that matters. Each
// re-read is as the person's browser session now stands, so a person
// removed or signed out stops receiving at the next change.
// matters runs in the publisher under the runtime's events lock
// (runtime.Subscribe): quick, and on the event alone.
func (h *Handlers) streamPart(c echo.Context, name string, matters func(runtime.Event) bool,
	read func(runtime.Principal) (templ.Component, error)) error {
	// Subscribed before the first read: a change between that read and
	// the subscription would otherwise never reach this page. A change to
	// who may do what re-reads the part too (EventAccess).
	wake := func(ev runtime.Event) bool { return ev.Kind == runtime.EventAccess || matters(ev) }
	events, stop := h.RT.Subscribe(wake)
	defer stop()
	part, err := read(principal(c))
	if err != nil {
		return err
	}
	sid, _ := c.Get(webSIDKey).(string)
	out := openSSE(c)
	beat := time.NewTicker(sseHeartbeat)
	defer beat.Stop()
	for {
		if err := out.send(ctx(c), name, part); err != nil {
			h.Log.Warn(name+" events: stream ended", "err", err)
			return nil
		}
		if http.NewResponseController(out.w).Flush() != nil || !out.await(ctx(c), events, beat.C, wake) {
			return nil // the browser went away, or the server stops
		}
		p, err := h.RT.AuthenticateSession(ctx(c), sid)
		if err == nil {
			part, err = read(p)
		}
		if err != nil {
			if e, ok := runtime.AsError(err); !ok || e.Kind == runtime.KindInternal {
				h.Log.Warn(name+" events: stream ended", "err", err)
			}
			return nil // signed out, removed, or no longer allowed: end the stream
		}
	}
}

// volumeSummary says what a call did in the volume, for its row in the
// call log: "read in/data.csv · wrote out/summary.txt".
func volumeSummary(accesses []fn.VolumeAccess) string {
	verbs := map[string]string{fn.VolumeRead: "read", fn.VolumeWrite: "wrote", fn.VolumeDelete: "deleted"}
	var parts []string
	for i, a := range accesses {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("and %d more", len(accesses)-i))
			break
		}
		parts = append(parts, verbs[a.Op]+" "+a.Path)
	}
	return strings.Join(parts, " · ")
}
