package web_test

import (
	"regexp"
	"strings"
	"testing"
)

// Every page that shows when something happened shows it as a <time> the
// page script puts in the viewer's zone, never as raw RFC 3339 or a bare
// "UTC" stamp only.
func TestPagesShowTimesForTheViewer(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	if st, _ := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "hi"}, 10); st != 200 {
		t.Fatalf("echo: %d", st)
	}
	b := w.browserOf()
	b.token() // never used: its Last used says so
	rfc3339 := regexp.MustCompile(`>\s*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`)
	for _, path := range []string{"/people", "/tokens", "/vaults/" + w.vault, "/versions/" + w.version, "/sessions/" + s.ID} {
		resp, page := b.get(path)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if !strings.Contains(page, "<time datetime=") || !strings.Contains(page, "data-local-time") {
			t.Errorf("%s shows no time for the viewer's zone", path)
		}
		if rfc3339.MatchString(page) {
			t.Errorf("%s shows a raw RFC 3339 time: %s", path, rfc3339.FindString(page))
		}
	}
	if _, page := b.get("/tokens"); !strings.Contains(page, ">never</td>") {
		t.Error("a token never used does not say so on the tokens page")
	}
}
