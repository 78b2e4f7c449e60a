package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A draft that saves must publish: the size limit is the stored (exported)
// form's, so a compact config that grows past it when stored is refused at
// save, with the limit that publishing would have applied.
func TestDraftThatSavesPublishes(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	_, v := e.agentWithDraft(tok)

	// Compact, each rule is 18 bytes; stored indented, 27: about 0.9 MiB in,
	// about 1.3 MiB stored.
	rules := make([]string, 0, 52000)
	for i := range 52000 {
		rules = append(rules, fmt.Sprintf(`"t%05d":"allow"`, i))
	}
	big := `{"mcp_servers":[{"name":"orders","url":"https://mcp.example.com/orders","default_policy":"ask","tool_rules":{` +
		strings.Join(rules, ",") + `}}]}`
	if len(big) >= 1<<20 {
		t.Fatalf("the test config is %d bytes; it must be under 1 MiB as sent", len(big))
	}
	status, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", big)
	if status == 200 {
		if status, body := e.rawAPI(tok, "POST", "/versions/"+v.ID+"/publish", ""); status != 200 {
			t.Fatalf("the draft saved but publishing it answered %d: %s", status, body)
		}
		return
	}
	var p problem
	_ = json.Unmarshal(body, &p)
	if status != 422 || p.Code != "config_too_large" || !strings.Contains(p.Detail, "1048576") || !strings.Contains(p.Detail, "stored") {
		t.Fatalf("an oversized config answered %d %+v; want 422 config_too_large naming the stored limit", status, p)
	}
	var got version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &got)
	if !sameJSON(t, got.Config, v.Config) {
		t.Fatalf("the refused save changed the draft: %s", got.Config)
	}

	// Under the stored limit, the same shape saves and publishes.
	small := `{"mcp_servers":[{"name":"orders","url":"https://mcp.example.com/orders","default_policy":"ask","tool_rules":{` +
		strings.Join(rules[:30000], ",") + `}}]}`
	if status, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", small); status != 200 {
		t.Fatalf("a config under the limit answered %d: %s", status, body)
	}
	if status, body := e.rawAPI(tok, "POST", "/versions/"+v.ID+"/publish", ""); status != 200 {
		t.Fatalf("publishing the saved draft answered %d: %s", status, body)
	}
}
