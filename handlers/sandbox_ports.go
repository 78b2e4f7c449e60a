package handlers

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// Port previews (issue 16 item 5). /sandboxes/{sandbox}/ports/{port}/ is
// the console's entry: a signed-in person holding Sandbox.port opens it (an
// Action) and is sent on to /sandbox-preview/{ticket}/…, where the server
// inside the sandbox answers through the sandbox's agent. The preview is
// served from the console's origin, so everything it answers carries
// PreviewCSP: a page the agent wrote runs in an opaque origin, cannot read
// or send the console's cookie (SameSite=Lax: never sent from an opaque
// origin's requests, and stripped here anyway), cannot read the console's
// answers, and cannot set or clear the console's cookies.

// PreviewCSP sandboxes every preview answer: scripts, forms, popups and
// downloads work; same-origin and top navigation do not.
const PreviewCSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads allow-pointer-lock"

// Limits of a preview request.
const (
	previewHeaderTimeout = 30 * time.Second
	previewTimeout       = 10 * time.Minute
	previewMaxBody       = 64 << 20
)

// previewRequestHeaders are the only request headers passed to the app:
// never Cookie, Authorization, or the console's own.
var previewRequestHeaders = []string{"Accept", "Accept-Language", "Cache-Control", "Content-Type", "Content-Length",
	"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range", "Range", "User-Agent",
	"Connection", "Upgrade", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions"}

// previewResponseHeaders are the only answer headers passed to the browser:
// never Set-Cookie, Clear-Site-Data, a policy of the app's own, or CORS.
var previewResponseHeaders = []string{"Content-Type", "Content-Length", "Content-Range", "Content-Encoding", "Content-Disposition",
	"Content-Language", "Accept-Ranges", "Last-Modified", "Etag", "Expires", "Cache-Control", "Vary", "Retry-After",
	"Connection", "Upgrade", "Sec-Websocket-Accept", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions"}

// OpenPort is Sandbox.port from the console: the entry of a port's preview.
func (h *Handlers) OpenPort(c echo.Context) error {
	port, err := runtime.ParsePort(c.Param("port"))
	if err != nil {
		return err
	}
	pv, err := h.RT.SandboxPortOpen(ctx(c), principal(c), c.Param("sandbox"), port)
	if err != nil {
		return err
	}
	// What follows /ports/{port}/ goes along, escaped as it came.
	rest := ""
	if _, after, ok := strings.Cut(c.Request().URL.EscapedPath(), "/ports/"+c.Param("port")+"/"); ok {
		rest = after
	}
	target := pv.Path + rest
	if q := c.Request().URL.RawQuery; q != "" {
		target += "?" + q
	}
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	return c.Redirect(http.StatusSeeOther, target)
}

// APIOpenPort is Sandbox.port on the API: the preview's path, ticket included.
func (h *Handlers) APIOpenPort(c echo.Context) error {
	port, err := runtime.ParsePort(c.Param("port"))
	if err != nil {
		return err
	}
	pv, err := h.RT.SandboxPortOpen(ctx(c), principal(c), c.Param("sandbox"), port)
	return answer(c, http.StatusOK, pv, err)
}

// PreviewPort serves a preview ticket's port: the request goes to the
// server inside the sandbox through its agent, headers filtered both ways.
func (h *Handlers) PreviewPort(c echo.Context) error {
	ticket := c.Param("ticket")
	t, err := h.RT.SandboxPortTicket(ctx(c), ticket)
	if err != nil {
		return previewError(c, err)
	}
	prefix := "/sandbox-preview/" + ticket
	req := c.Request()
	if req.URL.Path == prefix {
		return c.Redirect(http.StatusSeeOther, prefix+"/")
	}
	// The console's own page headers are not the preview's.
	hd := c.Response().Header()
	hd.Del("Content-Security-Policy")
	hd.Del(echo.HeaderVary)
	var dialErr error
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			out.URL.Scheme, out.URL.Host = "http", "localhost:"+strconv.Itoa(t.Port)
			out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, prefix)
			out.URL.RawPath = strings.TrimPrefix(pr.In.URL.RawPath, prefix)
			out.Host = out.URL.Host
			kept := http.Header{}
			for _, name := range previewRequestHeaders {
				if v, ok := out.Header[http.CanonicalHeaderKey(name)]; ok {
					kept[http.CanonicalHeaderKey(name)] = v
				}
			}
			out.Header = kept
		},
		Transport: &http.Transport{
			DialContext: func(cx context.Context, _, _ string) (net.Conn, error) {
				conn, err := h.RT.SandboxPortDial(cx, t)
				dialErr = err
				return conn, err
			},
			DisableKeepAlives:      true,
			DisableCompression:     true,
			ResponseHeaderTimeout:  previewHeaderTimeout,
			MaxResponseHeaderBytes: 64 << 10,
		},
		FlushInterval: 100 * time.Millisecond,
		ModifyResponse: func(resp *http.Response) error {
			kept := http.Header{}
			for _, name := range previewResponseHeaders {
				if v, ok := resp.Header[http.CanonicalHeaderKey(name)]; ok {
					kept[http.CanonicalHeaderKey(name)] = v
				}
			}
			if loc := previewLocation(resp.Header.Get("Location"), prefix, t.Port); loc != "" {
				kept.Set("Location", loc)
			}
			previewHeaders(kept)
			resp.Header = kept
			// No Set-Cookie in a trailer either: the transport fills
			// resp.Trailer again when the body ends, so capBody empties it
			// then, before the proxy copies it to the browser.
			resp.Trailer = nil
			if resp.StatusCode != http.StatusSwitchingProtocols {
				resp.Body = &capBody{ReadCloser: resp.Body, left: previewMaxBody, resp: resp}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if dialErr != nil {
				err = dialErr
			} else if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("the server inside did not answer within %s", previewHeaderTimeout)
			}
			_ = previewError(c, err)
		},
	}
	if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		cx, cancel := context.WithTimeout(req.Context(), previewTimeout)
		defer cancel()
		req = req.WithContext(cx)
	}
	rp.ServeHTTP(c.Response(), req)
	return nil
}

// previewHeaders are set on everything a preview answers.
func previewHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", PreviewCSP)
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
}

// previewLocation keeps a redirect inside the preview: a path is put under
// the prefix, the app's own address too; any other address is dropped.
func previewLocation(loc, prefix string, port int) string {
	if loc == "" {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil {
		return ""
	}
	switch {
	case u.Scheme == "" && u.Host == "":
		if strings.HasPrefix(u.Path, "/") {
			return prefix + u.RequestURI()
		}
		return u.String() // relative: stays under the prefix
	case (u.Scheme == "http" || u.Scheme == "https") && (u.Port() == strconv.Itoa(port) || u.Port() == "") &&
		(u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"):
		return prefix + u.RequestURI()
	}
	return ""
}

// previewError answers a preview request that could not be served with a
// short page of its own (still sandboxed: it is under the preview's path).
func previewError(c echo.Context, err error) error {
	status, title, detail := http.StatusBadGateway, "Preview unavailable", err.Error()
	if e, ok := runtime.AsError(err); ok {
		status, title, detail = http.StatusBadGateway, e.Title, e.Detail
		if e.Kind == runtime.KindForbidden {
			status = http.StatusForbidden
		}
		if e.Kind == runtime.KindConflict {
			status = http.StatusConflict
		}
	}
	hd := c.Response().Header()
	for name := range hd {
		hd.Del(name)
	}
	previewHeaders(hd)
	body := "<!doctype html><meta charset=utf-8><title>" + html.EscapeString(title) + "</title>" +
		"<h1>" + html.EscapeString(title) + "</h1><p>" + html.EscapeString(detail) + "</p>"
	return c.HTML(status, body)
}

// capBody ends an answer at previewMaxBody bytes, and drops the trailer
// the transport reads at its end.
type capBody struct {
	io.ReadCloser
	left int64
	resp *http.Response
}

func (b *capBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the preview's answer is over its %d MiB limit", previewMaxBody>>20)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if err != nil && b.resp != nil {
		b.resp.Trailer = nil
	}
	return n, err
}
