package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox/local"
)

// TestSandboxPortPreviewFollowsTheRealCheck: a preview's every request is
// checked as its opening was (roles and scopes, not the access level's
// preset alone). A viewer seated in a role holding Sandbox.port on one
// session opens and sees its preview; unseated, the same link is refused.
func TestSandboxPortPreviewFollowsTheRealCheck(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	owner := w.browser()
	if resp, _ := owner.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	viewer := w.person(owner, "viewer@example.com", "viewer")
	vt := viewer.token()
	s := w.session()
	w.exec(s, "mkdir -p site && echo '<h1>made inside</h1>' > site/index.html && cat > site/serve.py <<'EOF'\n"+headerServer+"EOF")
	w.serveInside(owner, s, "cd site && python3 serve.py")
	sbx := w.sandboxOf(s).ID

	var role struct {
		ID string `json:"id"`
	}
	if st := w.api(w.owner, "POST", "/roles", map[string]any{"name": "Previewer", "description": "previews one session",
		"permissions": []map[string]any{{"verb": "Sandbox.port", "scope": "session:" + s.ID}}}, &role); st != 201 {
		t.Fatalf("Role.create: %d", st)
	}
	var seat struct {
		ID string `json:"id"`
	}
	if st := w.api(w.owner, "POST", "/seats", map[string]any{"user": "viewer@example.com", "role": role.ID}, &seat); st != 201 {
		t.Fatalf("Seat.create: %d", st)
	}
	var pv struct {
		Path string `json:"path"`
	}
	var p problem
	if st := w.api(vt, "POST", "/sandboxes/"+sbx+"/ports/8000", nil, &pv); st != 200 || !strings.HasPrefix(pv.Path, "/sandbox-preview/") {
		t.Fatalf("the seated viewer's Sandbox.port: %d %+v", st, pv)
	}
	if resp, page := w.browser().get(pv.Path); resp.StatusCode != 200 || !strings.Contains(page, "made inside") {
		t.Fatalf("the seated viewer's preview answered %d %q", resp.StatusCode, page)
	}
	if st := w.api(w.owner, "DELETE", "/seats/"+seat.ID, nil, nil); st != 204 {
		t.Fatalf("Seat.delete: %d", st)
	}
	if resp, page := w.browser().get(pv.Path); resp.StatusCode != http.StatusForbidden || strings.Contains(page, "made inside") {
		t.Fatalf("the unseated viewer's preview answered %d %q", resp.StatusCode, page)
	}
	if st := w.api(vt, "POST", "/sandboxes/"+sbx+"/ports/8000", nil, &p); st != 403 {
		t.Fatalf("the unseated viewer's Sandbox.port: %d %+v", st, p)
	}
}
