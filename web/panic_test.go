package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/web"
)

// A handler that panics is answered with problem JSON, logged and counted
// as the 500 it is; one that panics after part of its answer left breaks
// the connection off, and is logged and counted as aborted. (No route of
// the server panics on purpose: two are added to it here.)
func TestPanicIsAnsweredLoggedAndCounted(t *testing.T) {
	e := newEnv(t)
	logs := &logtest.Buffer{}
	const metricsToken = "metrics-token-0123456789abcdef"
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	key := []byte("0123456789abcdef0123456789abcdef")
	ech := web.New(e.rt, web.Config{BaseURL: srv.URL, CookieHashKey: key, CookieBlockKey: key, MetricsToken: metricsToken,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	ech.Logger.SetOutput(io.Discard) // Recover's own print of the stack
	ech.GET("/api/v1/test/panic", func(echo.Context) error { panic("the handler broke") })
	ech.GET("/api/v1/test/broken", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte(`{"items": [` + strings.Repeat(`{"id": "one"}, `, 300)))
		c.Response().Flush()
		panic("the handler broke halfway")
	})
	handler = ech

	get := func(path string, hdr ...string) (*http.Response, string, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}
	resp, body, err := get("/api/v1/test/panic")
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get(echo.HeaderContentType); resp.StatusCode != http.StatusInternalServerError ||
		!strings.Contains(body, `"code":"internal"`) || !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("a panic was answered %d (%s) %q; want a 500 in problem JSON", resp.StatusCode, ct, body)
	}
	if resp, body, err := get("/api/v1/test/broken"); err == nil {
		t.Fatalf("an answer broken off by a panic read whole: %d, %d bytes", resp.StatusCode, len(body))
	}
	if !strings.Contains(logs.String(), "the handler broke halfway") {
		t.Fatalf("the panic after the answer began is not in the log:\n%s", logs.String())
	}
	_, body, err = get("/metrics", "Authorization", "Bearer "+metricsToken)
	for _, want := range []string{
		`subako_http_requests_total{method="GET",route="/api/v1/test/panic",status="500"} 1`,
		`subako_http_requests_total{method="GET",route="/api/v1/test/broken",status="aborted"} 1`,
	} {
		if err != nil || !strings.Contains(body, want) {
			t.Fatalf("metrics lack %s (err %v):\n%.3000s", want, err, body)
		}
	}
}
