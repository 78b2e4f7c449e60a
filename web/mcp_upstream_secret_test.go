package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoingSecret is the vault credential of the server below, which echoes
// the Authorization header it got in every error it answers.
const echoingSecret = "sk-echoed-9f1c2e7a5b"

// startEchoingServer is an MCP server offering one resource, one prompt and
// a tool whose reads and calls fail with a JSON-RPC error repeating the
// request's Authorization header, 1 MiB of message and 1 MiB of data, and a
// tool whose isError result repeats it.
func startEchoingServer(t *testing.T) string {
	server := mcp.NewServer(&mcp.Implementation{Name: "echoing", Version: "1"}, nil)
	fail := func(h http.Header) error {
		auth := h.Get("Authorization")
		return &jsonrpc.Error{Code: -32042, Message: "bad request with " + auth + strings.Repeat(" pad", 1<<18),
			Data: []byte(fmt.Sprintf(`{"authorization": %q, "pad": %q}`, auth, strings.Repeat("x", 1<<20)))}
	}
	server.AddResource(&mcp.Resource{URI: "echo://r", Name: "r"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, fail(req.Extra.Header)
	})
	server.AddPrompt(&mcp.Prompt{Name: "p"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, fail(req.Extra.Header)
	})
	type in struct{}
	mcp.AddTool(server, &mcp.Tool{Name: "rpc-error"}, func(_ context.Context, req *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, any, error) {
		return nil, nil, fail(req.Extra.Header)
	})
	mcp.AddTool(server, &mcp.Tool{Name: "is-error"}, func(_ context.Context, req *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no: " + req.Extra.Header.Get("Authorization")}}}, nil, nil
	})
	// Its tools/list quotes the header in a description.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				for i, tool := range lr.Tools {
					c := *tool
					c.Description = "called with " + req.GetExtra().Header.Get("Authorization")
					lr.Tools[i] = &c
				}
			}
			return res, err
		}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// An upstream server's error on resources/read and prompts/get reaches the
// agent with its code, its message cut short and its data only when small,
// and never with the session's vault credential for that server in it, nor
// in the Action recorded for the read; nor does a tool call's error or a
// tool's description.
func TestMCPUpstreamReadErrorHidesTheCredential(t *testing.T) {
	t.Parallel()
	url := startEchoingServer(t)
	w := newWorld(t, `{"mcp_servers": [{"name": "echoing", "url": "`+url+`", "default_policy": "allow"}]}`)
	if s := w.api(w.owner, "PUT", "/vaults/"+w.vault+"/credentials", map[string]any{"prefix": url, "type": "bearer", "secret": echoingSecret}, nil); s != 200 {
		t.Fatalf("Credential.set: %d", s)
	}
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	ctx := t.Context()
	_, readErr := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcp+echoing:echo://r"})
	_, getErr := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__echoing__p"})
	for what, err := range map[string]error{"resources/read": readErr, "prompts/get": getErr} {
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != -32042 {
			t.Fatalf("%s: %v, want the server's JSON-RPC error -32042", what, err)
		}
		if strings.Contains(rpc.Message, echoingSecret) || strings.Contains(string(rpc.Data), echoingSecret) {
			t.Errorf("%s: the vault credential reached the agent: %.200s", what, rpc.Message)
		}
		if !strings.HasPrefix(rpc.Message, "bad request with [credential] pad") || len(rpc.Message) > 1024 || len(rpc.Data) > 1024 {
			t.Errorf("%s: message of %d bytes (%.80s…), data of %d bytes: want the server's message cut short, its data only when small",
				what, len(rpc.Message), rpc.Message, len(rpc.Data))
		}
	}
	for _, tool := range []string{"mcp__echoing__rpc-error", "mcp__echoing__is-error"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || !res.IsError {
			t.Fatalf("%s: %v %+v, want an isError result", tool, err, res)
		}
		if text := resultText(res); strings.Contains(text, echoingSecret) || !strings.Contains(text, "[credential]") {
			t.Errorf("%s answered %.200q", tool, text)
		}
	}
	if st, raw := w.rawAPI(w.owner, "GET", "/sessions/"+s.ID+"/tool_calls", ""); st != 200 || strings.Contains(string(raw), echoingSecret) {
		t.Errorf("ToolCall.list: %d, the credential in it: %v", st, strings.Contains(string(raw), echoingSecret))
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 2 || tools.Tools[0].Description != "called with [credential]" {
		t.Errorf("tools/list: %v %+v", err, tools)
	}
	for _, path := range []string{"/sessions/" + s.ID + "/tools", "/sessions/" + s.ID + "/tools?refresh=true", "/versions/" + w.version + "/tools"} {
		if st, raw := w.rawAPI(w.owner, "GET", path, ""); st != 200 || strings.Contains(string(raw), echoingSecret) {
			t.Errorf("GET %s: %d, the credential in it: %v", path, st, strings.Contains(string(raw), echoingSecret))
		}
	}
	st, raw := w.rawAPI(w.owner, "GET", "/actions?session="+s.ID+"&limit=50", "")
	body := string(raw)
	if st != 200 || !strings.Contains(body, "Resource.read") || !strings.Contains(body, "Prompt.get") {
		t.Fatalf("Action.list: %d %.300s", st, body)
	}
	if strings.Contains(body, echoingSecret) {
		t.Errorf("the vault credential is in the Actions recorded for the reads")
	}
}
