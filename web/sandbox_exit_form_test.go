package web_test

import (
	"net/url"
	"strings"
	"testing"
)

// The grant form's Allowlist: a bad entry is refused beside the network
// field naming the entry; good ones are saved (one a line, commas too),
// shown back when editing, and listed on the version page.
func TestSandboxGrantFormAllowlist(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	_, v := e.agentWithDraft(owner.token())
	form := url.Values{"name": {"workbench"}, "release": {"2026"}, "network": {"allowlist"}, "default_policy": {"allow"},
		"allow": {"*.github.com\npypi.org, https://example.com/"}}
	resp, page := owner.post("/versions/"+v.ID+"/grants/sandbox", form)
	if resp.StatusCode != 422 || !strings.Contains(page, "&#34;https://example.com/&#34; is a URL; list its host name only (example.com)") {
		t.Fatalf("a URL in the allowlist: %d\n%s", resp.StatusCode, page)
	}
	if !strings.Contains(page, `*.github.com`) || !strings.Contains(page, `value="allowlist" checked`) {
		t.Fatalf("the refused form should keep what was typed")
	}
	form.Set("allow", "*.github.com\npypi.org, 203.0.113.0/24")
	if resp, page := owner.post("/versions/"+v.ID+"/grants/sandbox", form); resp.StatusCode != 303 {
		t.Fatalf("a good allowlist: %d\n%s", resp.StatusCode, page)
	}
	st, body := e.rawAPI(owner.token(), "GET", "/versions/"+v.ID, "")
	if st != 200 || !strings.Contains(string(body), `"network":{"type":"allowlist","allow":["*.github.com","pypi.org","203.0.113.0/24"]}`) {
		t.Fatalf("Version.get: %d %s", st, body)
	}
	edit := mustGet(owner, "/versions/"+v.ID+"/grants/sandbox/workbench/edit")
	if !strings.Contains(edit, "*.github.com\npypi.org\n203.0.113.0/24</textarea>") {
		t.Errorf("the edit form does not show the allowlist back")
	}
	if page := mustGet(owner, "/versions/"+v.ID); !strings.Contains(page, "Allowlist: *.github.com, pypi.org, 203.0.113.0/24") {
		t.Errorf("the version page does not list the allowlist")
	}
}
