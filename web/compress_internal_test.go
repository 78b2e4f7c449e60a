package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
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
// the client a part that reads as the whole. A short answer still held back
// is replaced by the error page (its status, none of the partial body, none
// of the handler's headers); a compressed one already under way ends
// without its end, so the client's decoder fails.
func TestAnswerBrokenHalfwayIsNeverTakenWhole(t *testing.T) {
	const part = `{"items": [{"id": "first"}, {"id": "second"`
	e := echo.New()
	e.Logger.SetOutput(io.Discard)
	e.Use(middleware.Recover(), compress)
	e.GET("/short", func(c echo.Context) error {
		c.Response().Header().Set("ETag", `"v1"`)
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte(part))
		panic("the handler broke after its first bytes")
	})
	e.GET("/short-failed", func(c echo.Context) error {
		c.Response().Header().Set("ETag", `"v1"`)
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte(part))
		return echo.NewHTTPError(http.StatusServiceUnavailable, "the store went away halfway")
	})
	e.GET("/long", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte(part + strings.Repeat(`, {"id": "another"}`, 200)))
		c.Response().Flush()
		panic("the handler broke after its first packets")
	})
	whole := part + strings.Repeat(`, {"id": "another"}`, 200) + "]}"
	e.GET("/whole", func(c echo.Context) error { return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, []byte(whole)) })
	srv := httptest.NewServer(e)
	defer srv.Close()
	get := func(path string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip") // set by hand: the client leaves the body as it came
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil || resp.Header.Get(echo.HeaderContentEncoding) != "gzip" {
			return resp, raw, err
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return resp, nil, err
		}
		body, err := io.ReadAll(zr)
		return resp, body, err
	}

	resp, body, err := get("/short")
	if err != nil || resp.StatusCode != http.StatusInternalServerError || bytes.Contains(body, []byte("first")) || resp.Header.Get("ETag") != "" {
		t.Fatalf("short answer, then a panic: %d, ETag %q, body %q, err %v; want Recover's 500 without the part or the handler's headers",
			resp.StatusCode, resp.Header.Get("ETag"), body, err)
	}
	resp, body, err = get("/short-failed")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("went away")) ||
		bytes.Contains(body, []byte("first")) || resp.Header.Get("ETag") != "" {
		t.Fatalf("short answer, then an error: %d, ETag %q, body %q, err %v; want the error's 503 in its place",
			resp.StatusCode, resp.Header.Get("ETag"), body, err)
	}
	resp, body, err = get("/long")
	if err == nil {
		t.Fatalf("long answer, then a panic: %d with %d bytes decoded whole; want the body cut so that its decoding fails",
			resp.StatusCode, len(body))
	}
	// The pooled encoder a broken answer used serves the next one whole.
	resp, body, err = get("/whole")
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != whole {
		t.Fatalf("the next answer: %d, %d bytes decoded of %d, err %v; want it whole", resp.StatusCode, len(body), len(whole), err)
	}
}
