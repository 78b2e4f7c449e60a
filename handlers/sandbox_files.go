package handlers

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// APISandboxFiles is Sandbox.files: one folder of /workspace (?path=).
func (h *Handlers) APISandboxFiles(c echo.Context) error {
	out, err := h.RT.SandboxFiles(ctx(c), principal(c), c.Param("sandbox"), c.QueryParam("path"))
	return answer(c, http.StatusOK, out, err)
}

// SandboxFileGet is Sandbox.readFile for the API and the console: the
// file's bytes as a download, never rendered.
func (h *Handlers) SandboxFileGet(c echo.Context) error {
	release, err := takeFileRead()
	if err != nil {
		return err
	}
	defer release()
	f, err := h.RT.SandboxReadFile(ctx(c), principal(c), c.Param("sandbox"), volumePath(c))
	if err != nil {
		return err
	}
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "application/octet-stream")
	hd.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	hd.Set(echo.HeaderContentLength, strconv.Itoa(len(f.Data)))
	hd.Set(echo.HeaderCacheControl, "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err = io.Copy(c.Response(), bytes.NewReader(f.Data))
	return err
}

// APISandboxFilePut is Sandbox.writeFile: the body is the file, as is.
func (h *Handlers) APISandboxFilePut(c echo.Context) error {
	out, err := h.RT.SandboxWriteFile(ctx(c), principal(c), c.Param("sandbox"), volumePath(c), c.Request().Body)
	return answer(c, http.StatusOK, out, err)
}

// UploadSandboxFile is Sandbox.writeFile from the Sandboxes tab: a
// multipart form with a "folder" field before its "file" part, streamed.
func (h *Handlers) UploadSandboxFile(c echo.Context) error {
	back := localPath(c.QueryParam("back"), "/sandboxes")
	name, part, err := uploadFormFile(c)
	if err != nil {
		return h.flashError(c, err, back)
	}
	out, err := h.RT.SandboxWriteFile(ctx(c), principal(c), c.Param("sandbox"), name, part)
	if err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Uploaded /workspace/"+out.Path+" ("+strconv.FormatInt(out.Size, 10)+" bytes).")
	return redirect(c, back)
}

// uploadFormFile reads an upload form up to its "file" part: the path is the
// optional "folder" field before it joined with the file's name, and the
// part streams the file, never buffered whole.
func uploadFormFile(c echo.Context) (string, io.Reader, error) {
	noFile := &runtime.Error{Kind: runtime.KindInvalid, Code: "required", Title: "Invalid input", Field: "file",
		Detail: "choose a file to upload", Fields: []runtime.FieldError{{Field: "file", Code: "required", Detail: "choose a file to upload"}}}
	mr, err := c.Request().MultipartReader()
	if err != nil {
		return "", nil, noFile
	}
	folder := ""
	for {
		part, err := mr.NextPart()
		if err != nil {
			return "", nil, noFile
		}
		switch part.FormName() {
		case "folder":
			b, _ := io.ReadAll(io.LimitReader(part, 2048))
			folder = strings.Trim(strings.TrimSpace(string(b)), "/")
			continue
		case "file":
		default:
			continue
		}
		if part.FileName() == "" {
			return "", nil, noFile
		}
		name := part.FileName()
		if folder != "" {
			name = folder + "/" + name
		}
		return name, part, nil
	}
}

// SandboxFileUpload reports whether r writes a sandbox file (the API's PUT,
// the Sandboxes tab's upload): bounded by the files verbs' own cap, above
// the small request body limit.
func SandboxFileUpload(r *http.Request) bool {
	p := r.URL.Path
	switch r.Method {
	case http.MethodPut:
		if strings.HasPrefix(p, "/internal/v1/sandboxes/") { // forwarded by a replica (internal.go)
			return true
		}
		rest, ok := strings.CutPrefix(p, "/api/v1/sandboxes/")
		return ok && strings.Contains(rest, "/files/")
	case http.MethodPost:
		rest, ok := strings.CutPrefix(p, "/sandboxes/")
		return ok && strings.HasSuffix(rest, "/files/upload") && strings.Count(rest, "/") == 2
	}
	return false
}

// sandboxFilesView is the Sandboxes tab's file browser for one sandbox of
// the session (?files=ID&path=DIR), or nil when none is open.
func (h *Handlers) sandboxFilesView(c echo.Context, p runtime.Principal, session string) *pages.SandboxFilesView {
	id := c.QueryParam("files")
	if id == "" {
		return nil
	}
	dir := strings.Trim(c.QueryParam("path"), "/")
	tab := "/sessions/" + session + "/sandboxes"
	v := &pages.SandboxFilesView{SandboxID: id, Path: dir, Close: tab,
		CanRead: p.Can("Sandbox.readFile"), CanWrite: p.Can("Sandbox.writeFile")}
	v.Back = tab + "?" + url.Values{"files": {id}, "path": {dir}}.Encode()
	sb, err := h.RT.SandboxGet(ctx(c), p, id)
	if err != nil || sb.Session != session {
		v.Error = "No such sandbox in this session."
		return v
	}
	v.Grant, v.State = sb.Grant, sb.State
	v.CanWrite = v.CanWrite && sb.State == "running"
	l, err := h.RT.SandboxFiles(ctx(c), p, id, dir)
	if err != nil {
		if e, ok := runtime.AsError(err); ok {
			v.Error = e.Detail
		} else {
			v.Error = err.Error()
		}
		return v
	}
	v.Source, v.Truncated = l.Source, l.Truncated
	link := func(d string) string {
		return tab + "?" + url.Values{"files": {id}, "path": {d}}.Encode()
	}
	if dir != "" {
		v.Crumbs = append(v.Crumbs, pages.SandboxFileCrumb{Name: "workspace", URL: link("")})
		parts := strings.Split(dir, "/")
		for i := range parts[:len(parts)-1] {
			v.Crumbs = append(v.Crumbs, pages.SandboxFileCrumb{Name: parts[i], URL: link(strings.Join(parts[:i+1], "/"))})
		}
		v.Here = parts[len(parts)-1]
		v.Up = link(path.Dir("/" + dir)[1:])
	}
	for _, e := range l.Entries {
		row := pages.SandboxFileRow{Name: e.Name, Path: e.Path, Type: e.Type, Target: e.Target, Modified: isoTime(e.ModifiedAt)}
		switch e.Type {
		case "folder":
			row.Open = link(e.Path)
		case "file":
			row.Size = skillSize(e.Size)
			row.Download = "/sandboxes/" + id + "/file/" + escapePath(e.Path)
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// escapePath escapes each name of a slash-separated path for a URL.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
