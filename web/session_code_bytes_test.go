package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestExampleAgentToolBytesFlatAgainstCode measures what the example agent
// ("Load the example") reads to learn its tools: flat, the tools/list
// result; in code mode, its tools/list (search, fetch, do) and the
// session's $.d.ts, which fetch gives whole. It prints both counts for
// docs/benchmarks.md, and checks the code-mode $ holds every flat tool.
func TestExampleAgentToolBytesFlatAgainstCode(t *testing.T) {
	f := newFnEnv(t)
	f.install("jq")
	resp, _ := f.browser.post("/example", url.Values{})
	where := resp.Header.Get("Location")
	_, page := f.browser.get(where)
	w := &world{env: f.env, owner: f.owner}
	flat := session{ID: strings.TrimPrefix(where, "/sessions/"), Token: sessionTokenRe.FindString(page)}
	if flat.Token == "" {
		t.Fatalf("Load the example led to %q with no token", where)
	}
	flatList, err := w.mcpSession(flat).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("flat tools/list: %v", err)
	}
	flatBytes, _ := json.Marshal(flatList)

	// The same version with tools_as code, set in the editor, published, and a session of it.
	var agents []struct{ ID, Name string }
	w.api(w.owner, "GET", "/agents", nil, &agents)
	agent := ""
	for _, a := range agents {
		if a.Name == "example" {
			agent = a.ID
		}
	}
	resp, _ = f.browser.post("/agents/"+agent+"/versions", url.Values{"from": {"latest"}})
	draft := strings.TrimPrefix(resp.Header.Get("Location"), "/versions/")
	if resp, card := f.browser.do(http.MethodPost, "/versions/"+draft+"/tools-as", url.Values{"tools_as": {"code"}}, map[string]string{"HX-Request": "true"}); resp.StatusCode != 200 ||
		!strings.Contains(card, `data-testid="tools-as-saved"`) {
		t.Fatalf("Tools as: code answered %d:\n%s", resp.StatusCode, card)
	}
	if st := w.api(w.owner, "POST", "/versions/"+draft+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	w.version = draft
	code := w.session()
	codeList, err := w.mcpSession(code).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("code tools/list: %v", err)
	}
	codeListBytes, _ := json.Marshal(codeList)
	dts := sessionTypes(t, w, code)
	for _, tool := range flatList.Tools {
		parts := strings.SplitN(tool.Name, "__", 3)
		if !strings.Contains(dts, parts[2]) {
			t.Errorf("$.d.ts lacks %s:\n%s", tool.Name, dts)
		}
	}
	// An agent that looks up one tool: search for it, fetch its types.
	cs := w.mcpSession(code)
	found, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "sandbox"}})
	if err != nil || found.IsError {
		t.Fatalf("search: %v %v", err, found)
	}
	one, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"name": "sandbox.workbench.exec"}})
	if err != nil || one.IsError {
		t.Fatalf("fetch: %v %v", err, one)
	}
	codeBytes := len(codeListBytes) + len(dts)
	fmt.Printf("example agent, %d tools: flat tools/list %d bytes; session $.d.ts %d bytes (%.2f× flat); code mode tools/list %d + $.d.ts = %d bytes (%.2f× flat); search \"sandbox\" %d + fetch of exec %d bytes\n",
		len(flatList.Tools), len(flatBytes), len(dts), float64(len(dts))/float64(len(flatBytes)), len(codeListBytes), codeBytes,
		float64(codeBytes)/float64(len(flatBytes)), len(resultText(found)), len(resultText(one)))
}
