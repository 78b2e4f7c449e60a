package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestPollSurvivesANavigation: a page that replaces itself while the test
// polls for what the next page shows. chromedp's own Poll fails there
// ("Cannot find context with specified id"); the tests' poll starts again
// in the new document.
func TestPollSurvivesANavigation(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/a", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><title>a</title><script>setTimeout(() => location.href = "/b", 300)</script>`))
	})
	mux.HandleFunc("/b", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><title>b</title><p id=there>b</p>`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx := browserCtx(t)
	const onB = `document.title === "b" && !!document.getElementById("there")`
	for i := range 3 {
		steps(t, ctx, "open a, then wait for b", chromedp.Navigate(srv.URL+"/a"), poll(onB))
		if i == 0 {
			// What chromedp alone does in the same place, for the record.
			err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/a"), void(chromedp.Poll[bool](onB)))
			t.Logf("chromedp.Poll across the same navigation: %v", err)
		}
	}
}
