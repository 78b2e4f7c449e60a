package handlers

import (
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// volumePath is the file path of a /volume/* route, unescaped once (echo
// routes on the escaped path when there is one).
func volumePath(c echo.Context) string {
	p := c.Param("*")
	if c.Request().URL.RawPath != "" {
		if u, err := url.PathUnescape(p); err == nil {
			p = u
		}
	}
	return p
}

// APIVolumeList is Volume.list.
func (h *Handlers) APIVolumeList(c echo.Context) error {
	out, err := h.RT.VolumeList(ctx(c), principal(c), c.Param("session"), c.QueryParam("prefix"))
	return answer(c, http.StatusOK, out, err)
}

// APIVolumeGet is Volume.get: the file's bytes, streamed, as a download.
func (h *Handlers) APIVolumeGet(c echo.Context) error {
	return h.serveVolumeFile(c, false)
}

// APIVolumePut is Volume.put: the body is the file, streamed as is.
func (h *Handlers) APIVolumePut(c echo.Context) error {
	out, err := h.RT.VolumePut(ctx(c), principal(c), c.Param("session"), volumePath(c), c.Request().Body)
	return answer(c, http.StatusOK, out, err)
}

// APIVolumeDelete is Volume.delete.
func (h *Handlers) APIVolumeDelete(c echo.Context) error {
	return answerEmpty(c, h.RT.VolumeDelete(ctx(c), principal(c), c.Param("session"), volumePath(c)))
}

// previewTypes are the types the console shows inline, by extension. Any
// other file (HTML and SVG among them: they would run on the console's
// origin) is only ever sent as a download.
var previewTypes = map[string]string{
	".txt": "text/plain; charset=utf-8", ".md": "text/plain; charset=utf-8", ".csv": "text/plain; charset=utf-8",
	".json": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8", ".yaml": "text/plain; charset=utf-8",
	".yml": "text/plain; charset=utf-8", ".xml": "text/plain; charset=utf-8", ".html": "text/plain; charset=utf-8",
	".htm": "text/plain; charset=utf-8", ".py": "text/plain; charset=utf-8", ".js": "text/plain; charset=utf-8",
	".go": "text/plain; charset=utf-8", ".sh": "text/plain; charset=utf-8", ".tsv": "text/plain; charset=utf-8",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".pdf": "application/pdf",
}

// PreviewKind says how the Files tab previews a path: "text", "image",
// "pdf", or "" for none.
func PreviewKind(p string) string {
	t := previewTypes[strings.ToLower(path.Ext(p))]
	switch {
	case strings.HasPrefix(t, "text/"):
		return "text"
	case strings.HasPrefix(t, "image/"):
		return "image"
	case t == "application/pdf":
		return "pdf"
	}
	return ""
}

// serveVolumeFile streams a file: inline (for the Files tab's preview, text
// as plain text, images, PDF; framed by the console alone) or as a download.
func (h *Handlers) serveVolumeFile(c echo.Context, inline bool) error {
	p := volumePath(c)
	body, f, err := h.RT.VolumeGet(ctx(c), principal(c), c.Param("session"), p)
	if err != nil {
		return err
	}
	defer body.Close()
	hd := c.Response().Header()
	typ := previewTypes[strings.ToLower(path.Ext(p))]
	if inline && typ != "" {
		hd.Set(echo.HeaderContentType, typ)
		hd.Set(echo.HeaderContentDisposition, mime.FormatMediaType("inline", map[string]string{"filename": path.Base(p)}))
		// Framed by the session page only; nothing in it runs.
		hd.Set("X-Frame-Options", "SAMEORIGIN")
		csp := "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'self'"
		if typ != "application/pdf" { // Chromium's PDF viewer refuses a sandboxed frame
			csp = "sandbox; " + csp
		}
		hd.Set("Content-Security-Policy", csp)
	} else {
		hd.Set(echo.HeaderContentType, "application/octet-stream")
		hd.Set(echo.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	}
	hd.Set(echo.HeaderContentLength, strconv.FormatInt(f.Size, 10))
	hd.Set("ETag", `"`+f.SHA256+`"`)
	hd.Set(echo.HeaderCacheControl, "private, no-cache")
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err = io.Copy(c.Response(), body)
	return err
}

// VolumeFile serves a volume file to the console: ?preview=1 inline.
func (h *Handlers) VolumeFile(c echo.Context) error {
	return h.serveVolumeFile(c, c.QueryParam("preview") == "1")
}

// UploadVolumeFile is Volume.put from the Files tab: a multipart form with
// an optional "folder" field before its "file" part, streamed, never
// buffered whole.
func (h *Handlers) UploadVolumeFile(c echo.Context) error {
	id := c.Param("session")
	back := "/sessions/" + id + "/files"
	name, part, err := uploadFormFile(c) // sandbox_files.go
	if err != nil {
		return h.flashError(c, err, back)
	}
	out, err := h.RT.VolumePut(ctx(c), principal(c), id, name, part)
	if err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Uploaded "+out.Path+" ("+strconv.FormatInt(out.Size, 10)+" bytes).")
	return redirect(c, back)
}

// DeleteVolumeFile is Volume.delete from the Files tab.
func (h *Handlers) DeleteVolumeFile(c echo.Context) error {
	id := c.Param("session")
	back := "/sessions/" + id + "/files"
	p := c.FormValue("path")
	if err := h.RT.VolumeDelete(ctx(c), principal(c), id, p); err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Deleted "+p+".")
	return redirect(c, back)
}

// VolumeUpload reports whether r sends a file to a volume (Volume.put, the
// Files tab's upload): its body is streamed to the volume store and bounded
// there by the volume's limits, not by the request body limits, and it is
// never read as JSON or a form on the way.
func VolumeUpload(r *http.Request) bool {
	p := r.URL.Path
	switch r.Method {
	case http.MethodPut:
		rest, ok := strings.CutPrefix(p, "/api/v1/sessions/")
		return ok && strings.Contains(rest, "/volume/")
	case http.MethodPost:
		rest, ok := strings.CutPrefix(p, "/sessions/")
		return ok && strings.HasSuffix(rest, "/files") && strings.Count(rest, "/") == 1
	}
	return false
}
