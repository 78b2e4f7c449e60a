package web

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/runtime/logtest"
)

// A handler that flushes before it writes anything sends its header then:
// the body that follows must be in the encoding that header names, plain
// without a Content-Type, gzip for JSON, never gzip under a plain header.
func TestFlushBeforeTheBodyKeepsHeaderAndBodyAgreed(t *testing.T) {
	long := strings.Repeat(`{"line": "a line of a streamed answer"}`+"\n", 100)
	for _, tc := range []struct {
		contentType, want string
	}{{"", ""}, {"application/json", "gzip"}} {
		e := echo.New()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		h := compress(func(c echo.Context) error {
			if tc.contentType != "" {
				c.Response().Header().Set(echo.HeaderContentType, tc.contentType)
			}
			c.Response().Flush()
			_, err := c.Response().Write([]byte(long))
			return err
		})
		if err := h(e.NewContext(req, rec)); err != nil {
			t.Fatal(err)
		}
		resp := rec.Result() // the header as it was sent, not as it is now
		got := resp.Header.Get(echo.HeaderContentEncoding)
		body, _ := io.ReadAll(resp.Body)
		if got == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err == nil {
				body, err = io.ReadAll(zr)
			}
			if err != nil {
				t.Fatalf("Content-Type %q: the body under Content-Encoding gzip does not decode: %v", tc.contentType, err)
			}
		}
		if got != tc.want || string(body) != long {
			t.Fatalf("Content-Type %q: Content-Encoding %q (want %q), body %.60q… of %d bytes; want the %d bytes written",
				tc.contentType, got, tc.want, body, len(body), len(long))
		}
	}
}

// A handler that fails or panics halfway through its answer must not leave
// the client a part that reads as the whole, whatever encoding it accepts.
// An answer still held back is replaced by the error page (the error's
// status, none of the partial body, none of the headers set for it); one
// already under way is broken off, so the client's read fails, and the
// failure is logged.
func TestAnswerBrokenHalfwayIsNeverTakenWhole(t *testing.T) {
	const part = `{"items": [{"id": "first"}, {"id": "second"`
	long := part + strings.Repeat(`, {"id": "another"}`, 200)
	whole := long + "]}"
	logs := &logtest.Buffer{}
	h := &handlers.Handlers{Log: slog.New(slog.NewTextHandler(logs, nil))}
	e := echo.New()
	e.Logger.SetOutput(io.Discard)
	e.HTTPErrorHandler = h.ErrorHandler
	e.Use(middleware.Recover(), compress)
	begin := func(c echo.Context, body string) {
		c.Response().Header().Set("ETag", `"v1"`)
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte(body))
	}
	gone := echo.NewHTTPError(http.StatusServiceUnavailable, "the store went away halfway")
	e.GET("/api/short", func(c echo.Context) error {
		begin(c, part)
		panic("the handler broke after its first bytes")
	})
	e.GET("/api/short-failed", func(c echo.Context) error {
		begin(c, part)
		return gone
	})
	e.GET("/api/long", func(c echo.Context) error {
		begin(c, long)
		c.Response().Flush()
		panic("the handler broke after its first packets")
	})
	e.GET("/api/long-failed", func(c echo.Context) error {
		begin(c, long)
		return gone
	})
	e.GET("/api/flushed-failed", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().Flush()
		return gone
	})
	e.GET("/api/whole", func(c echo.Context) error { return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, []byte(whole)) })
	srv := httptest.NewServer(e)
	defer srv.Close()

	for _, accept := range []string{"gzip", "br", ""} {
		// The header is set by hand, so the client leaves the body as it
		// came: what is read is what was sent.
		get := func(path string) (*http.Response, []byte, error) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			req.Header.Set("Accept-Encoding", accept)
			resp, err := srv.Client().Do(req)
			if err != nil {
				return nil, nil, err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return resp, body, err
		}
		for _, tc := range []struct{ path, detail string }{
			{"/api/short", "something went wrong"},
			{"/api/short-failed", "went away"},
		} {
			resp, body, err := get(tc.path)
			if err != nil {
				t.Fatalf("Accept-Encoding %q, %s: %v", accept, tc.path, err)
			}
			if resp.StatusCode < 500 || resp.Header.Get(echo.HeaderContentEncoding) != "" ||
				bytes.Contains(body, []byte("first")) || !bytes.Contains(body, []byte(tc.detail)) || resp.Header.Get("ETag") != "" {
				t.Fatalf("Accept-Encoding %q, %s: %d, ETag %q, body %q; want the error page in place of the part, without its headers",
					accept, tc.path, resp.StatusCode, resp.Header.Get("ETag"), body)
			}
		}
		for _, path := range []string{"/api/long", "/api/long-failed", "/api/flushed-failed"} {
			logs.Reset()
			resp, body, err := get(path)
			if err == nil {
				t.Fatalf("Accept-Encoding %q, %s: %d with %d bytes read in full; want the answer broken off", accept, path, resp.StatusCode, len(body))
			}
			if !strings.Contains(logs.String(), "request failed after its answer began") {
				t.Fatalf("Accept-Encoding %q, %s: broken off, but the log does not say why:\n%s", accept, path, logs.String())
			}
		}
		if !strings.Contains(logs.String(), "went away") {
			t.Fatalf("the log of a failure after the answer began does not name the error:\n%s", logs.String())
		}
		// The pooled encoder a broken answer used serves the next one whole.
		resp, body, err := get("/api/whole")
		if err == nil && resp.Header.Get(echo.HeaderContentEncoding) == "gzip" {
			var zr *gzip.Reader
			if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
				body, err = io.ReadAll(zr)
			}
		} else if err == nil && resp.Header.Get(echo.HeaderContentEncoding) == "br" {
			body, err = io.ReadAll(brotli.NewReader(bytes.NewReader(body)))
		}
		if err != nil || resp.StatusCode != http.StatusOK || string(body) != whole {
			t.Fatalf("Accept-Encoding %q, the next answer: %d bytes decoded of %d, err %v; want it whole with a 200", accept, len(body), len(whole), err)
		}
	}
}

// A client that leaves in the middle of a long answer is not a failure of
// the server's: the handler's write error is neither logged as one nor
// answered by cutting a connection already gone, and the request counts
// as 499, not as aborted.
func TestClientLeavingHalfwayIsNotAServerFailure(t *testing.T) {
	logs := &logtest.Buffer{}
	h := &handlers.Handlers{Log: slog.New(slog.NewTextHandler(logs, nil))}
	reg := prometheus.NewRegistry()
	e := echo.New()
	e.Logger.SetOutput(io.Discard)
	e.HTTPErrorHandler = h.ErrorHandler
	e.Use(metrics(reg), middleware.Recover(), compress)
	chunk := []byte(strings.Repeat(`{"id": "a line of a long answer"}, `, 2000))
	e.GET("/api/long", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		for range 1000 { // 70 MB: far more than the client reads
			if _, err := c.Response().Write(chunk); err != nil {
				return err
			}
			c.Response().Flush()
		}
		return nil
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	for _, accept := range []string{"gzip", ""} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/long", nil)
		req.Header.Set("Accept-Encoding", accept)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() // gone, with most of the answer unread
		srv.Client().CloseIdleConnections()
	}
	count := func(status string) float64 {
		families, _ := reg.Gather()
		for _, f := range families {
			if f.GetName() != "subako_http_requests_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "status" && l.GetValue() == status {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
	for deadline := time.Now().Add(10 * time.Second); count("499") < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := count("499"); got != 2 || count("aborted") != 0 {
		t.Fatalf("two clients that left counted %v as 499 and %v as aborted; want 2 and 0", got, count("aborted"))
	}
	if strings.Contains(logs.String(), "request failed") {
		t.Fatalf("a client's leaving was logged as a failure:\n%s", logs.String())
	}
}

// A client that stops sending but still reads (a half-closed connection:
// net/http then ends the request's context) and whose answer fails for it
// still sees the answer broken off, never a short one ending cleanly.
func TestHalfClosedClientStillSeesTheAnswerBrokenOff(t *testing.T) {
	e := echo.New()
	e.Logger.SetOutput(io.Discard)
	e.Use(middleware.Recover(), compress)
	e.GET("/api/long", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		_, _ = c.Response().Write([]byte(strings.Repeat(`{"id": "a line"}, `, 200)))
		c.Response().Flush()
		select { // a database read that fails because the context ended
		case <-c.Request().Context().Done():
			return c.Request().Context().Err()
		case <-time.After(10 * time.Second):
			return nil
		}
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	for _, accept := range []string{"gzip", "identity"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET /api/long HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: %s\r\n\r\n", srv.Listener.Addr(), accept)
		_ = conn.(*net.TCPConn).CloseWrite()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		conn.Close()
		if err == nil {
			t.Fatalf("Accept-Encoding %s: %d with %d bytes that end cleanly; want the answer broken off", accept, resp.StatusCode, len(body))
		}
	}
}
