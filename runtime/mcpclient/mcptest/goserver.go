package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PageSize is the tools/list page size of StartGoServer's servers: small, so
// that every client test with more tools than this walks several pages.
const PageSize = 2

// Tool is one tool of an in-process server; make one with NewTool or use
// Echo, Sleep, Fail and Named.
type Tool struct {
	add func(*mcp.Server)
}

// NewTool declares a tool with a typed handler. The SDK infers its input
// schema from In and validates input against it, as a real Go server does.
func NewTool[In any](tool *mcp.Tool, h mcp.ToolHandlerFor[In, any]) Tool {
	return Tool{add: func(s *mcp.Server) { mcp.AddTool(s, tool, h) }}
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to send back"`
}

// Echo answers "Echo: <message>", as server-everything's echo does.
func Echo() Tool {
	return NewTool(&mcp.Tool{Name: "echo", Description: "Echoes back the input string"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("Echo: " + in.Message), nil, nil
		})
}

type sleepIn struct {
	Milliseconds int `json:"ms" jsonschema:"how long to wait"`
}

// Sleep waits ms milliseconds, or until the call is cancelled.
func Sleep() Tool {
	return NewTool(&mcp.Tool{Name: "sleep", Description: "Waits ms milliseconds"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(in.Milliseconds) * time.Millisecond):
				return text(fmt.Sprintf("slept %dms", in.Milliseconds)), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
}

// Fail reports a tool-level failure (isError), the way a tool says its input
// was fine but the work failed.
func Fail() Tool {
	return NewTool(&mcp.Tool{Name: "fail", Description: "Always fails"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			res := text("the tool failed on purpose")
			res.IsError = true
			return res, nil, nil
		})
}

// Named returns a tool called name that answers its own name; for lists
// long enough to need several pages.
func Named(name string) Tool {
	return NewTool(&mcp.Tool{Name: name, Description: "answers " + name},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(name), nil, nil
		})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// NewServer returns a Go SDK server offering tools, with tools/list pages of
// PageSize, for tests that mount it themselves.
func NewServer(tools ...Tool) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"},
		&mcp.ServerOptions{PageSize: PageSize})
	for _, tool := range tools {
		tool.add(server)
	}
	return server
}

// StartGoServer serves tools from an in-process Go SDK server over
// Streamable HTTP behind Gate(token), and returns its endpoint URL. The
// server stops when the test ends.
func StartGoServer(t testing.TB, token string, tools ...Tool) string {
	t.Helper()
	server := NewServer(tools...)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(Gate(token, handler))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}
