package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

const token = "test-token-4f1c"

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// These tests run against the real @modelcontextprotocol/server-everything.

func TestEverythingDiscover(t *testing.T) {
	url := mcptest.StartEverything(t, token)
	tests := []struct {
		name    string
		attach  func(*http.Request)
		wantErr string
	}{
		{"right token", bearer(token), ""},
		{"no credential", nil, "requires a credential (401)"},
		{"wrong token", bearer("stolen"), "refused the credential (401)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools, err := discoverOnce(url, tc.attach)
			if tc.wantErr != "" {
				if !errors.Is(err, mcpclient.ErrCredentialRefused) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Discover error = %v, want one saying %q", err, tc.wantErr)
				}
				if len(tools) != 0 {
					t.Fatalf("refused Discover still returned %d tools", len(tools))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			echo := findTool(tools, "echo")
			if echo == nil {
				t.Fatalf("echo missing from %d tools", len(tools))
			}
			var schema struct {
				Properties map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(echo.InputSchema, &schema); err != nil || schema.Properties["message"] == nil {
				t.Fatalf("echo input schema %s lacks the message property (%v)", echo.InputSchema, err)
			}
			if echo.Description == "" {
				t.Error("echo has no description")
			}
		})
	}
}

func findTool(tools []mcpclient.Tool, name string) *mcpclient.Tool {
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i]
		}
	}
	return nil
}

func TestEverythingCall(t *testing.T) {
	url := mcptest.StartEverything(t, token)
	pool := mcpclient.NewPool(local)
	t.Cleanup(func() { pool.Close() })
	tests := []struct {
		name      string
		tool      string
		args      string
		wantText  string
		wantIsErr bool
		wantErr   error
	}{
		{"echo", "echo", `{"message":"hello subako"}`, "Echo: hello subako", false, nil},
		{"invalid input is the tool's failure", "echo", `{"msg":1}`, "expected string", true, nil},
		{"unknown tool", "no-such-tool", `{}`, "", false, mcpclient.ErrUnknownTool},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := pool.Call(context.Background(), url, "cred-1", bearer(token), tc.tool, json.RawMessage(tc.args))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), fmt.Sprintf("has no tool %q", tc.tool)) {
					t.Fatalf("Call error = %v, want %v naming the tool", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.wantIsErr || !strings.Contains(res.Text, tc.wantText) {
				t.Fatalf("Call = {Text: %q, IsError: %v}, want text containing %q, IsError %v", res.Text, res.IsError, tc.wantText, tc.wantIsErr)
			}
			var content []map[string]any
			if err := json.Unmarshal(res.Content, &content); err != nil || len(content) == 0 || content[0]["type"] != "text" {
				t.Fatalf("Content %s is not an MCP content list (%v)", res.Content, err)
			}
		})
	}
}

func TestEverythingConcurrentCalls(t *testing.T) {
	url := mcptest.StartEverything(t, token)
	pool := mcpclient.NewPool(local)
	t.Cleanup(func() { pool.Close() })
	const workers, calls = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				msg := fmt.Sprintf("worker %d call %d", w, i)
				args, _ := json.Marshal(map[string]string{"message": msg})
				res, err := pool.Call(context.Background(), url, "cred-1", bearer(token), "echo", args)
				if err == nil && res.Text != "Echo: "+msg {
					err = fmt.Errorf("call %q answered %q", msg, res.Text)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := pool.Len(); n != 1 {
		t.Errorf("pool holds %d sessions after concurrent calls with one credential, want 1", n)
	}
}

func TestServerDown(t *testing.T) {
	// A port that was free a moment ago: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	_, err = callOnce(context.Background(), url, bearer(token), "echo", json.RawMessage(`{"message":"x"}`))
	if !errors.Is(err, mcpclient.ErrUnreachable) || !strings.Contains(err.Error(), url+" refused the connection") {
		t.Fatalf("Call to a stopped server: %v; want an error naming %s and saying it refused the connection", err, url)
	}
}
