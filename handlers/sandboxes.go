package handlers

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// APISandboxList is Sandbox.list.
func (h *Handlers) APISandboxList(c echo.Context) error {
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	f := runtime.SandboxFilter{Session: c.QueryParam("session"), Cursor: c.QueryParam("cursor"), Limit: limit}
	pg, err := h.RT.SandboxListPage(ctx(c), principal(c), f, 500)
	return answerList(c, pg.Items, pg.PageLinks, err)
}

// APISandboxGet is Sandbox.get.
func (h *Handlers) APISandboxGet(c echo.Context) error {
	out, err := h.RT.SandboxGet(ctx(c), principal(c), c.Param("sandbox"))
	return answer(c, http.StatusOK, out, err)
}

// APIArchiveDelete is Archive.delete.
func (h *Handlers) APIArchiveDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.ArchiveDelete(ctx(c), principal(c), c.Param("sandbox")))
}

// APIArchiveUpload is Archive.upload: the body is the .tar.gz, streamed.
func (h *Handlers) APIArchiveUpload(c echo.Context) error {
	out, err := h.RT.ArchiveUpload(ctx(c), principal(c), c.Param("sandbox"), c.Request().Body)
	return answer(c, http.StatusOK, out, err)
}

// UploadArchive is Archive.upload from the console: a multipart form whose
// "archive" file part is streamed to the runtime, never buffered whole.
func (h *Handlers) UploadArchive(c echo.Context) error {
	back := localPath(c.QueryParam("back"), "/sandboxes")
	part, err := archivePart(c)
	if err == nil {
		_, err = h.RT.ArchiveUpload(ctx(c), principal(c), c.Param("sandbox"), part)
	}
	if err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Archive uploaded: the sandbox's next exec restores it.")
	return redirect(c, back)
}

// archivePart finds the form's "archive" file.
func archivePart(c echo.Context) (io.Reader, error) {
	noFile := &runtime.Error{Kind: runtime.KindInvalid, Code: "required", Title: "Invalid input", Field: "archive",
		Detail: "choose a .tar.gz file to upload", Fields: []runtime.FieldError{{Field: "archive", Code: "required", Detail: "choose a .tar.gz file to upload"}}}
	mr, err := c.Request().MultipartReader()
	if err != nil {
		return nil, noFile
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			return nil, noFile
		}
		if part.FormName() == "archive" && part.FileName() != "" {
			return part, nil
		}
	}
}

// DownloadArchive is Archive.download, for the API and the console alike:
// the .tar.gz streams with its length and a file name.
func (h *Handlers) DownloadArchive(c echo.Context) error {
	f, err := h.RT.ArchiveDownload(ctx(c), principal(c), c.Param("sandbox"))
	if err != nil {
		return err
	}
	defer f.Body.Close()
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "application/gzip")
	hd.Set(echo.HeaderContentLength, strconv.FormatInt(f.Bytes, 10))
	hd.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": f.Filename}))
	hd.Set("Last-Modified", f.ModTime.UTC().Format(http.TimeFormat))
	hd.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(http.StatusOK)
	// A failure from here on comes after the answer began: the router
	// breaks the answer off, and logs it unless the client left (web/compress.go).
	_, err = io.Copy(c.Response(), f.Body)
	return err
}

// Sandboxes lists every session's sandboxes.
func (h *Handlers) Sandboxes(c echo.Context) error {
	f := runtime.SandboxFilter{Cursor: c.QueryParam("cursor")}
	t, err := h.sandboxTable(c, principal(c), f)
	if err != nil {
		return err
	}
	v := pages.SandboxesView{EventsURL: sandboxEventsURL(c, t, f), Table: t}
	return render(c, http.StatusOK, pages.SandboxesPage(h.shell(c, "Sandboxes", "sandboxes"), v))
}

// SessionSandboxes is a session's Sandboxes tab.
func (h *Handlers) SessionSandboxes(c echo.Context) error {
	s, err := h.RT.SessionGet(ctx(c), principal(c), c.Param("session"))
	if err != nil {
		return err
	}
	f := runtime.SandboxFilter{Session: s.ID, Cursor: c.QueryParam("cursor")}
	t, err := h.sandboxTable(c, principal(c), f)
	if err != nil {
		return err
	}
	v := pages.SandboxesView{SessionID: s.ID, SessionTitle: s.Title, Table: t, EventsURL: sandboxEventsURL(c, t, f)}
	v.Files = h.sandboxFilesView(c, principal(c), s.ID)
	title := s.Title
	if title == "" {
		title = s.ID
	}
	return render(c, http.StatusOK, pages.SandboxesPage(h.shell(c, "Sandboxes · "+title, "sessions"), v))
}

// DeleteArchive is Archive.delete from the console.
func (h *Handlers) DeleteArchive(c echo.Context) error {
	back := localPath(c.FormValue("back"), "/sandboxes")
	if err := h.RT.ArchiveDelete(ctx(c), principal(c), c.Param("sandbox")); err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Archive deleted.")
	return redirect(c, back)
}

// sandboxEventsURL is the stream of the table t (one session's, or every
// session's when f.Session is "", the page at f.Cursor), starting from what t shows.
func sandboxEventsURL(c echo.Context, t pages.SandboxTable, f runtime.SandboxFilter) string {
	q := url.Values{"seen": {liveSeen(ctx(c), map[string]templ.Component{"sandboxes": pages.SandboxTableView(t)})}}
	if f.Session != "" {
		q.Set("session", f.Session)
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	return "/sandboxes/events?" + q.Encode()
}

// SandboxEvents streams the sandbox table (of one session with ?session=)
// as server-sent events: once on connecting, then after every state change.
// Each update re-reads the person's browser session, so a person removed or
// signed out stops receiving at the next change.
func (h *Handlers) SandboxEvents(c echo.Context) error {
	f := runtime.SandboxFilter{Session: c.QueryParam("session"), Cursor: c.QueryParam("cursor")}
	matters := func(ev runtime.Event) bool {
		return ev.Kind == "sandbox" && (f.Session == "" || ev.SessionID == f.Session)
	}
	return h.streamPart(c, "sandboxes", matters, func(p runtime.Principal) (templ.Component, error) {
		t, err := h.sandboxTable(c, p, f)
		return pages.SandboxTableView(t), err
	})
}

func (h *Handlers) sandboxTable(c echo.Context, p runtime.Principal, f runtime.SandboxFilter) (pages.SandboxTable, error) {
	list, err := h.RT.SandboxListPage(ctx(c), p, f, runtime.PageSize)
	if err != nil {
		return pages.SandboxTable{}, err
	}
	t := pages.SandboxTable{ShowSession: f.Session == "", Back: "/sandboxes"}
	if f.Session != "" {
		t.Back = "/sessions/" + f.Session + "/sandboxes"
	}
	pg := pagerOf(t.Back, nil, f.Cursor, list.PageLinks)
	t.Newer, t.Older = pg.Newer, pg.Older
	for _, s := range list.Items {
		row := sandboxRow(s, p)
		row.Ports = h.sandboxPorts(c, p, s) // sandbox_live.go
		t.Rows = append(t.Rows, row)
	}
	for i := range t.Rows {
		t.Rows[i].ReleaseInfo = h.RT.ReleaseInfo(t.Rows[i].Release)
	}
	return t, nil
}

func sandboxRow(s runtime.SandboxView, p runtime.Principal) pages.SandboxRow {
	r := pages.SandboxRow{ID: s.ID, SessionID: s.Session, SessionTitle: s.SessionTitle, Grant: s.Grant, Tool: s.Tool,
		Release: s.Release, Network: s.Network, State: s.State, Error: s.Error,
		Started: isoTimePtr(s.StartedAt), LastActive: isoTimePtr(s.LastActiveAt),
		Suspended: isoTimePtr(s.SuspendedAt), Retired: isoTimePtr(s.RetiredAt),
		MachineTime: machineTime(s.MachineSeconds), Credits: fmt.Sprintf("%.2f SC", s.Credits),
		ArchiveError: s.ArchiveError, ArchiveNote: s.ArchiveNote, Replica: s.Replica, CanDownload: p.Can("Archive.download"), CanDelete: p.Can("Archive.delete") && s.Deletable(),
		CanUpload: p.Can("Archive.upload") && s.Uploadable()}
	if s.Archive != nil {
		r.HasArchive, r.ArchiveSize, r.ArchiveAt = true, skillSize(s.Archive.Bytes), isoTime(s.Archive.CreatedAt)
	}
	r.Exit = exitLines(s.Exit) // sandbox_exit.go
	return r
}

// machineTime reads as a person says it: 42 s, 5 min 3 s, 2 h 10 min.
func machineTime(secs float64) string {
	d := time.Duration(secs) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}
