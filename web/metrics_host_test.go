package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/web"
)

// The --metrics-addr listener takes no token, so a DNS rebinding page (its
// own name resolved to 127.0.0.1) could read it from an operator's browser.
// It answers a scraper that addresses it by IP or by an allowed name, and
// 421 to any other Host.
func TestMetricsAddressRefusesRebindingHosts(t *testing.T) {
	rt := runtime.New(modelstest.Open(t), runtime.Options{Log: quiet})
	key := []byte("0123456789abcdef0123456789abcdef")
	_, metrics := web.NewWithMetrics(rt, web.Config{BaseURL: "https://console.example.com", MetricsElsewhere: true,
		AllowedHosts: []string{"scrape.internal"}, CookieHashKey: key, CookieBlockKey: key, Log: quiet})
	h := web.MetricsHostCheck("https://console.example.com", []string{"scrape.internal"}, metrics)
	for host, want := range map[string]int{
		"127.0.0.1:9090":           200,
		"10.0.0.7:9090":            200,
		"[::1]:9090":               200,
		"localhost:9090":           200,
		"scrape.internal:9090":     200,
		"console.example.com":      200,
		"rebind.evil.example:9090": http.StatusMisdirectedRequest,
		"127.0.0.1.evil.example":   http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want || (want == 200) != strings.Contains(rec.Body.String(), "go_goroutines") {
			t.Errorf("/metrics on its own address with Host %s answered %d; want %d", host, rec.Code, want)
		}
	}
}
