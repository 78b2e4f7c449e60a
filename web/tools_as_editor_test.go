package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestVersionToolsAsEditor: the version editor shows "Tools as" and a
// draft's editor changes it in place; a bad value is refused under the
// choice naming tools_as and its values; editing a grant keeps the setting;
// export carries it, Compare lists it, and a published version shows it
// read-only.
func TestVersionToolsAsEditor(t *testing.T) {
	e := newEnv(t)
	b := e.owner()
	tok := b.token()
	agent, draft := e.agentWithDraft(tok)
	if st, body := e.rawAPI(tok, "PUT", "/versions/"+draft.ID+"/config", `{"builtins": [{"name": "session"}, {"name": "ask_user"}]}`); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	_, page := b.get("/versions/" + draft.ID)
	if !strings.Contains(page, `data-testid="tools-as"`) || !strings.Contains(page, "Tools as") ||
		!strings.Contains(page, `value="flat" checked`) {
		t.Fatalf("the draft's editor does not offer Tools as with flat chosen:\n%s", page)
	}
	htmx := map[string]string{"HX-Request": "true"}
	resp, card := b.do(http.MethodPost, "/versions/"+draft.ID+"/tools-as", url.Values{"tools_as": {"typescript"}}, htmx)
	if resp.StatusCode != 422 || !strings.Contains(card, `data-testid="tools-as-error"`) || !strings.Contains(card, "tools_as must be flat or code") ||
		!strings.Contains(card, `aria-invalid="true"`) {
		t.Fatalf("a bad value answered %d:\n%s", resp.StatusCode, card)
	}
	resp, card = b.do(http.MethodPost, "/versions/"+draft.ID+"/tools-as", url.Values{"tools_as": {"code"}}, htmx)
	if resp.StatusCode != 200 || !strings.Contains(card, "Saved: tools as code.") || !strings.Contains(card, `value="code" checked`) {
		t.Fatalf("choosing code answered %d:\n%s", resp.StatusCode, card)
	}
	// Removing a grant in the editor keeps the setting.
	if resp, _ := b.post("/versions/"+draft.ID+"/grants/builtin/session/remove", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove a grant: %d", resp.StatusCode)
	}
	var v struct {
		Config struct {
			ToolsAs  string            `json:"tools_as"`
			Builtins []json.RawMessage `json:"builtins"`
		}
	}
	e.api(tok, "GET", "/versions/"+draft.ID, nil, &v)
	if v.Config.ToolsAs != "code" || len(v.Config.Builtins) != 1 {
		t.Fatalf("after removing a grant the config is %+v", v.Config)
	}
	if _, file := b.get("/versions/" + draft.ID + "/export"); !strings.Contains(file, `"tools_as": "code"`) {
		t.Errorf("the export lacks tools_as:\n%s", file)
	}
	if st := e.api(tok, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	_, page = b.get("/versions/" + draft.ID)
	if !strings.Contains(page, `data-testid="tools-as-value">code<`) || strings.Contains(page, `data-testid="tools-as-code"`) {
		t.Errorf("the published version does not show Tools as: code read-only")
	}
	// A plain form post (no htmx) on a published version is refused, nothing changes.
	if resp, _ := b.post("/versions/"+draft.ID+"/tools-as", url.Values{"tools_as": {"flat"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a post to a published version answered %d", resp.StatusCode)
	}
	e.api(tok, "GET", "/versions/"+draft.ID, nil, &v)
	if v.Config.ToolsAs != "code" {
		t.Errorf("a published version's setting changed: %+v", v.Config)
	}
	// Compare with a new flat draft lists the setting.
	var next struct{ ID string }
	e.api(tok, "POST", "/agents/"+agent+"/versions", map[string]any{"config": map[string]any{}}, &next)
	_, diff := b.get("/versions/" + draft.ID + "/diff?against=" + next.ID)
	if !strings.Contains(diff, "tools_as") || !strings.Contains(diff, "flat") {
		t.Errorf("Compare does not list tools_as flat → code:\n%s", diff)
	}
}
