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
