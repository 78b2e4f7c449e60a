package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
)

// MCP serves a session's tools over MCP (Streamable HTTP, the official Go
// SDK) at /mcp/sessions/:session: tools/list is Session.tools and tools/call
// is ToolCall.create, so policies, approvals and records are the runtime's,
// exactly as on the JSON API.
type MCP struct {
	h        *Handlers
	mu       sync.Mutex
	handlers map[string]http.Handler
}

// NewMCP builds the MCP endpoint.
func NewMCP(h *Handlers) *MCP { return &MCP{h: h, handlers: map[string]http.Handler{}} }

type mcpPrincipalKey struct{}

// Serve answers one HTTP request of the MCP transport. Each Subako session has
// its own SDK handler, so an MCP session id minted for one Subako session
// means nothing on another's URL.
func (m *MCP) Serve(c echo.Context) error {
	id := c.Param("session")
	// A session token reaches its own session only; the verbs inside are recorded.
	if err := m.h.RT.AuthorizeSession(ctx(c), principal(c), id); err != nil {
		return err
	}
	req := c.Request().WithContext(context.WithValue(ctx(c), mcpPrincipalKey{}, principal(c)))
	m.handlerFor(id).ServeHTTP(c.Response(), req)
	return nil
}

func (m *MCP) handlerFor(session string) http.Handler {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.handlers[session]; ok {
		return h
	}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, _ := r.Context().Value(mcpPrincipalKey{}).(runtime.Principal)
		return m.server(p, session)
	}, &mcp.StreamableHTTPOptions{
		SessionTimeout: 30 * time.Minute,
		// Every request carries a bearer token checked above; DNS rebinding
		// cannot borrow a browser's cookies here, and the check would refuse
		// a console behind a local reverse proxy.
		DisableLocalhostProtection: true,
	})
	m.handlers[session] = h
	return h
}

// server is the MCP server one agent connection talks to, acting as p.
func (m *MCP) server(p runtime.Principal, session string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "subako", Title: "Subako session " + session, Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				return m.listTools(ctx, p, session)
			case "tools/call":
				return m.callTool(ctx, p, session, req.(*mcp.CallToolRequest))
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

func (m *MCP) listTools(ctx context.Context, p runtime.Principal, session string) (*mcp.ListToolsResult, error) {
	offered, err := m.h.RT.SessionTools(ctx, p, session, false)
	if err != nil {
		return nil, err
	}
	out := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	for _, t := range offered {
		out.Tools = append(out.Tools, &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return out, nil
}

// callTool runs ToolCall.create and waits, for as long as the client keeps the
// request open, for an ask-first call's decision.
func (m *MCP) callTool(ctx context.Context, p runtime.Principal, session string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	wait := 600.0
	call, err := m.h.RT.ToolCallCreate(ctx, p, runtime.ToolCallInput{Session: session, Tool: req.Params.Name,
		Input: req.Params.Arguments, WaitSeconds: &wait})
	if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindInvalid {
		return toolError(e.Error()), nil
	}
	if err != nil {
		return nil, err
	}
	if call.Open() {
		// The client's patience is the request's context: wait until it ends.
		if call, err = m.h.RT.ToolCallWait(ctx, p, call.ID, 24*time.Hour); err != nil {
			return nil, err
		}
	}
	return callResult(call), nil
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// callResult turns a finished call into MCP's result: an MCP server's own
// content passes through as text; other tools' JSON output is the text.
func callResult(call runtime.ToolCallView) *mcp.CallToolResult {
	switch call.Status {
	case runtime.CallRefused:
		return toolError("refused: " + call.Reason)
	case runtime.CallFailed:
		return toolError(call.Error)
	case runtime.CallSucceeded:
	default:
		return toolError("the call is still " + call.Status + " (" + call.ID + "): ToolCall.get will have its result")
	}
	var mcpOut struct {
		Text       string          `json:"text"`
		Structured json.RawMessage `json:"structured"`
		Content    json.RawMessage `json:"content"`
	}
	res := &mcp.CallToolResult{}
	// Only an MCP server's output has the server's own content; other tools'
	// JSON may well have a "content" field of its own (a file's content).
	if strings.HasPrefix(call.Tool, "mcp__") && json.Unmarshal(call.Output, &mcpOut) == nil && mcpOut.Content != nil {
		res.Content = []mcp.Content{&mcp.TextContent{Text: mcpOut.Text}}
		if len(mcpOut.Structured) > 0 && string(mcpOut.Structured) != "null" {
			res.StructuredContent = mcpOut.Structured
		}
		return res
	}
	res.Content = []mcp.Content{&mcp.TextContent{Text: string(call.Output)}}
	var obj map[string]any
	if json.Unmarshal(call.Output, &obj) == nil {
		res.StructuredContent = obj
	}
	return res
}
