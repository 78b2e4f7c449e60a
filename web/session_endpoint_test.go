package web_test

import (
	"strings"
	"testing"
)

// An active session's page shows its MCP endpoint with a Copy button; an
// ended session offers no endpoint to copy.
func TestSessionPageOffersItsEndpointToCopy(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	s := w.session(w.vault)
	page := mustGet(owner, "/sessions/"+s.ID)
	if !strings.Contains(page, `data-testid="session-mcp-endpoint">`+w.srv.URL+"/mcp/sessions/"+s.ID+"</code>") ||
		!strings.Contains(page, `data-copy="session-mcp-endpoint" aria-label="Copy the MCP endpoint"`) {
		t.Fatalf("the session page has no endpoint to copy:\n%s", page)
	}
	if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 && st != 204 {
		t.Fatalf("Session.end: %d", st)
	}
	if page := mustGet(owner, "/sessions/"+s.ID); strings.Contains(page, "session-mcp-endpoint") {
		t.Fatal("an ended session still offers its endpoint")
	}
}
