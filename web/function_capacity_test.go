package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/fntest"
)

// TestFunctionCallsPastCapacityAre429AndRecorded holds both instance slots
// of a small engine with calls that wait on a test server, then calls once
// more through the API: 429 with Retry-After and code capacity, the call
// recorded as refused with why; once the held calls end, calls succeed again.
func TestFunctionCallsPastCapacityAre429AndRecorded(t *testing.T) {
	e := newEnv(t)
	mods := fntest.Build(t)
	eng, err := fn.New(context.Background(), fn.Config{DataDir: mods.DataDir, AllowPrivate: true,
		Caps: fn.Caps{MaxMemoryMB: 64}, Capacity: fn.Capacity{MaxInstances: 2, MemoryMB: 512, MaxQueued: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	e.rt.SetFunctionEngine(eng)
	owner := e.owner().token()
	wasm, manifest := mods.TestModule(t, "fetcher")
	if st := e.api(owner, "POST", "/functions", installJSON(wasm, manifest), nil); st != 201 {
		t.Fatalf("Function.install: %d", st)
	}

	arrived, release := make(chan struct{}, 10), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Write([]byte("done"))
	}))
	t.Cleanup(api.Close)
	t.Cleanup(free)

	_, draft := e.agentWithDraft(owner)
	cfg := `{"functions": [{"name": "f", "package": "fetcher", "version": "1.0.0", "origins": ["` + api.URL + `"], "default_policy": "allow"}]}`
	if st, body := e.rawAPI(owner, "PUT", "/versions/"+draft.ID+"/config", cfg); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := e.api(owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("Version.publish: %d", st)
	}
	var s struct{ ID, Token string }
	if st := e.api(owner, "POST", "/sessions", map[string]any{"version": draft.ID, "title": "capacity"}, &s); st != 201 {
		t.Fatalf("Session.create: %d", st)
	}
	call := func() (*http.Response, []byte) {
		body := `{"tool": "fn__f__fetch", "input": {"url": "` + api.URL + `"}, "wait_seconds": 60}`
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/sessions/"+s.ID+"/tool_calls", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp, []byte(b.String())
	}

	held := make(chan int, 2)
	for range 2 {
		go func() {
			resp, _ := call()
			if resp == nil {
				held <- 0
				return
			}
			held <- resp.StatusCode
		}()
	}
	<-arrived
	<-arrived

	mreq, _ := http.NewRequest("GET", e.srv.URL+"/metrics", nil)
	mreq.Header.Set("Authorization", "Bearer "+owner)
	if mresp, err := http.DefaultClient.Do(mreq); err != nil {
		t.Fatal(err)
	} else {
		m, _ := io.ReadAll(mresp.Body)
		mresp.Body.Close()
		for _, want := range []string{"subako_function_instances_running 2", "subako_function_memory_reserved_bytes 1.34217728e+08"} {
			if !strings.Contains(string(m), want) {
				t.Fatalf("/metrics lacks %q while two 64 MiB calls run", want)
			}
		}
	}

	resp, body := call()
	var p struct {
		Code, Detail string
		Status       int
	}
	_ = json.Unmarshal(body, &p)
	if resp.StatusCode != 429 || p.Code != "capacity" || resp.Header.Get("Retry-After") != "5" ||
		!strings.Contains(p.Detail, "2 of 2 instances are running") {
		t.Fatalf("call past capacity: %d Retry-After=%q %s; want 429, Retry-After 5, code capacity naming the limit",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	// Through MCP, the same refusal is a tool result the model can read.
	w := &world{env: e, owner: owner}
	res, err := w.mcpSession(session{ID: s.ID, Token: s.Token}).CallTool(t.Context(), &mcp.CallToolParams{Name: "fn__f__fetch",
		Arguments: map[string]any{"url": api.URL}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "refused: tool call") || !strings.Contains(resultText(res), "over capacity") {
		t.Fatalf("MCP call past capacity: %+v, %v; want a tool error saying it was refused over capacity", res, err)
	}

	var calls []struct{ ID, Status, Reason, Error string }
	if st := e.api(owner, "GET", "/sessions/"+s.ID+"/tool_calls", nil, &calls); st != 200 {
		t.Fatalf("ToolCall.list: %d", st)
	}
	refused, named := 0, false
	for _, c := range calls {
		if c.Status == "refused" {
			refused++
			named = named || strings.Contains(p.Detail, c.ID)
			if !strings.Contains(c.Reason, "over capacity") || !strings.Contains(c.Reason, "--max-function-instances") {
				t.Fatalf("refused call's reason = %q; want it to say over capacity and name the flag", c.Reason)
			}
		}
	}
	if refused != 2 || !named {
		t.Fatalf("%d refused calls recorded (the 429 names one: %v), want 2 (API and MCP): %+v", refused, named, calls)
	}

	free()
	for range 2 {
		if st := <-held; st != 200 {
			t.Fatalf("a held call ended with %d, want 200", st)
		}
	}
	if resp, body := call(); resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"succeeded"`) {
		t.Fatalf("call after the held ones ended: %d %s", resp.StatusCode, body)
	}
}
