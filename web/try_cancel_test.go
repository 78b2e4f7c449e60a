package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// A person who leaves the page while Try a tool waits (they clicked a link or
// posted another form) ends the request: the call stays recorded and waiting,
// and the server logs no error for a browser that stopped listening.
func TestTryToolLeftWhileWaitingLogsNoError(t *testing.T) {
	e, logs := newLoggedEnv(t)
	mcpURL := mcptest.StartEverything(t, mcpToken)
	owner := e.owner()
	tok := owner.token()
	vault := owner.createVault("customer-a")
	if resp, _ := owner.post("/vaults/"+vault+"/credentials", url.Values{"prefix": {mcpURL}, "type": {"bearer"}, "secret": {mcpToken}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Set credential: %d", resp.StatusCode)
	}
	agent, draft := e.agentWithDraft(tok)
	if st, body := e.rawAPI(tok, "PUT", "/versions/"+draft.ID+"/config", strings.ReplaceAll(everythingConfig, "MCP_URL", mcpURL)); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	e.api(tok, "POST", "/versions/"+draft.ID+"/publish", nil, nil)
	w := &world{env: e, owner: tok, mcpURL: mcpURL, vault: vault, version: draft.ID, agent: agent}
	s := w.titledSession("leave")

	cx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		form := url.Values{"tool": {getEnv}, "input": {`{}`}}
		req, _ := http.NewRequestWithContext(cx, http.MethodPost, e.srv.URL+"/sessions/"+s.ID+"/try", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("HX-Request", "true")
		if resp, err := owner.http.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	w.pending(tok, "", 1) // the call waits for an approver
	cancel()
	<-done
	// The request's own log line is written once its handler has returned.
	const line = "route=/sessions/:session/try"
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), line) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	got := logs.String()
	if !strings.Contains(got, line) {
		t.Fatal("the Try request never finished")
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "/try") && (strings.Contains(l, "level=ERROR") || strings.Contains(l, "status=500")) {
			t.Errorf("a browser that left is logged as a server error: %s", l)
		}
	}
	if q := w.pending(tok, "", 1); q[0].Tool != getEnv {
		t.Fatalf("the call is not kept waiting: %+v", q)
	}
}
