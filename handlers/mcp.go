package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
)

// MCP serves a session's tools over MCP (Streamable HTTP, the official Go
// SDK) at /mcp/sessions/:session: tools/list is Session.tools and tools/call
// is ToolCall.create, so policies, approvals and records are the runtime's,
// exactly as on the JSON API.
//
// Who acts is decided per message, from the bearer token of the HTTP request
// that carried it, never from whoever opened the MCP session: a person whose
// access was lowered, or whose token was revoked, loses it on their next call,
// and the SDK refuses an MCP session id presented by anyone but its opener.
type MCP struct {
	h        *Handlers
	mu       sync.Mutex
	sessions map[string]*mcpSession // by Subako session id
}

// mcpSession is one Subako session's MCP endpoint: one SDK server (the SDK
// asks for it on every HTTP request, so it is built once) behind its
// streamable handler, wrapped in the SDK's bearer check.
type mcpSession struct {
	server  *mcp.Server
	handler http.Handler
}

// principalExtra is where the verifier leaves the Principal in the SDK's TokenInfo.
const principalExtra = "principal"

// NewMCP builds the MCP endpoint. It forgets a session's endpoint when the
// session ends, so the map holds only live sessions.
func NewMCP(h *Handlers) *MCP {
	m := &MCP{h: h, sessions: map[string]*mcpSession{}}
	events, _ := h.RT.Subscribe(func(e runtime.Event) bool {
		return e.Kind == "session" && e.State == runtime.SessionEnded
	})
	go m.watch(events)
	return m
}

// watch forgets the endpoints of sessions as they end. A missed end (a
// resync in its place: this subscriber fell behind, or the replicas' bus
// lost events) and a session ended just after a request checked it are
// caught by a sweep: after a resync, at once or as soon as
// mcpResyncSweepGap has passed since the last sweep, and every
// mcpSweepEvery.
func (m *MCP) watch(events <-chan runtime.Event) {
	tick := time.NewTicker(mcpSweepEvery)
	defer tick.Stop()
	var swept time.Time
	var later <-chan time.Time // a resync's sweep, put off to keep the gap
	sweep := func() {
		m.sweep()
		swept, later = time.Now(), nil
	}
	for {
		select {
		case e, open := <-events:
			if !open {
				return // the runtime stopped its events: the server is stopping
			}
			switch {
			case e.Resync():
				if wait := mcpResyncSweepGap - time.Since(swept); wait <= 0 {
					sweep()
				} else if later == nil {
					later = time.After(wait)
				}
			case e.Kind == "session" && e.State == runtime.SessionEnded:
				m.forget(e.SessionID)
			}
		case <-later:
			sweep()
		case <-tick.C:
			sweep()
		}
	}
}

// mcpSweepEvery is how often endpoints of sessions no longer active are
// dropped; mcpResyncSweepGap spaces the sweeps resyncs ask for, each of
// which reads every session the map holds; mcpSweepPatience bounds one
// sweep's reads (the rest wait for the next).
const (
	mcpSweepEvery     = 5 * time.Minute
	mcpResyncSweepGap = 10 * time.Second
	mcpSweepPatience  = 30 * time.Second
)

// sweep forgets the endpoints of sessions that have ended or are gone. A
// session it cannot read (the database failing, which is also when
// resyncs come) keeps its endpoint and its agents' connections.
func (m *MCP) sweep() {
	m.mu.Lock()
	ids := make([]string, 0, len(m.sessions))
	for id := range m.sessions {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), mcpSweepPatience)
	defer cancel()
	for _, id := range ids {
		err := m.h.RT.AuthorizeSession(ctx, runtime.System, id)
		if e, ok := runtime.AsError(err); ok && (e.Code == "session_ended" || e.Kind == runtime.KindNotFound) {
			m.forget(id)
		}
	}
}

// Serve answers one HTTP request of the MCP transport. Each Subako session has
// its own SDK handler, so an MCP session id minted for one Subako session
// means nothing on another's URL.
func (m *MCP) Serve(c echo.Context) error {
	id := c.Param("session")
	p := principal(c)
	// A session token reaches its own session only; the verbs inside are
	// recorded. Its own session's token was found active by the bearer check
	// of this very request, so only others (people's tokens) read the session.
	if p.Kind != runtime.PrincipalSession || p.SessionID != id || !p.Can("Session.get") {
		if err := m.h.RT.AuthorizeSession(ctx(c), p, id); err != nil {
			if e, ok := runtime.AsError(err); ok && e.Code == "session_ended" {
				// The ended event may have been missed by a slow subscriber.
				m.forget(id)
			}
			return err
		}
	}
	// The SDK's bearer check asks verify again: hand it who this request's
	// token already resolved to rather than resolve it twice.
	req := c.Request()
	req = req.WithContext(context.WithValue(req.Context(), verifiedKey{}, p))
	// Its messages find the HTTP request's end (mcp_progress.go).
	req, gone := markRequest(req)
	defer gone()
	// Task messages (mcp_tasks.go) are answered here; the rest by the SDK.
	m.serveHTTP(c.Response(), req, m.endpoint(id), id, p)
	return nil
}

// verifiedKey carries the Principal RequireBearer resolved for a request.
type verifiedKey struct{}

func (m *MCP) endpoint(session string) *mcpSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[session]; ok {
		return s
	}
	srv := m.server(session)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout: 30 * time.Minute,
		// Every request carries a bearer token checked above; DNS rebinding
		// cannot borrow a browser's cookies here, and the check would refuse
		// a console behind a local reverse proxy.
		DisableLocalhostProtection: true,
		// A client that gives up on a call (an ask-first call it tired of
		// waiting for) ends the wait here too, for clients that support it.
		PropagateRequestCancellation: true,
	})
	s := &mcpSession{server: srv, handler: auth.RequireBearerToken(m.verify, nil)(h)}
	m.sessions[session] = s
	return s
}

// forget drops an ended session's endpoint and closes its open MCP sessions.
func (m *MCP) forget(session string) {
	m.mu.Lock()
	s, ok := m.sessions[session]
	delete(m.sessions, session)
	m.mu.Unlock()
	if !ok {
		return
	}
	for ss := range s.server.Sessions() {
		_ = ss.Close()
	}
}

// verify is who the bearer token of each HTTP request is (RequireBearer
// resolved it for this very request, through the runtime's token cache,
// which a revocation empties at once). The UserID it
// returns binds an MCP session to the principal that opened it (the SDK
// answers 403 to anyone else presenting its id); the Principal itself rides
// along to the message handlers.
func (m *MCP) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	p, ok := r.Context().Value(verifiedKey{}).(runtime.Principal)
	if !ok {
		var err error
		if p, err = m.h.RT.Authenticate(ctx, token); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
	}
	return &auth.TokenInfo{
		UserID: string(p.Kind) + ":" + p.ID,
		// The token's own expiry and revocation are checked by Authenticate on
		// every request; the SDK only needs a time that has not passed.
		Expiration: time.Now().Add(24 * time.Hour),
		Extra:      map[string]any{principalExtra: p},
	}, nil
}

// server is the MCP server of one Subako session. Its handlers act as the
// principal of each message's own HTTP request.
func (m *MCP) server(session string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "subako", Title: "Subako session " + session, Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{},
			// MCP grants' resources and prompts (mcp_resources.go).
			Resources: &mcp.ResourceCapabilities{}, Prompts: &mcp.PromptCapabilities{}}})
	m.serveResources(srv, session)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" && method != "tools/call" {
				return next(ctx, method, req)
			}
			p, err := messagePrincipal(req)
			if err != nil {
				return nil, err
			}
			// A version may offer its tools as code: search, fetch and do
			// (mcp_session_code.go).
			if code, err := m.h.RT.SessionIsCode(ctx, p, session); err != nil {
				return nil, err
			} else if code {
				return m.serveCode(ctx, p, session, method, req)
			}
			if method == "tools/list" {
				return m.listTools(ctx, p, session)
			}
			return m.callTool(ctx, p, session, req.(*mcp.CallToolRequest))
		}
	})
	return srv
}

// messagePrincipal is who sent this message, as verify resolved the token of
// the HTTP request that carried it.
func messagePrincipal(req mcp.Request) (runtime.Principal, error) {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if p, ok := extra.TokenInfo.Extra[principalExtra].(runtime.Principal); ok {
			return p, nil
		}
	}
	return runtime.Anonymous, runtime.ErrUnauthenticated
}

func (m *MCP) listTools(ctx context.Context, p runtime.Principal, session string) (*mcp.ListToolsResult, error) {
	offered, err := m.h.RT.SessionTools(ctx, p, session, false)
	if err != nil {
		return nil, err
	}
	out := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	for _, t := range offered {
		out.Tools = append(out.Tools, mcpTool(t))
	}
	return out, nil
}

// callTool runs ToolCall.create and waits, for as long as the client keeps the
// request open, for an ask-first call's decision.
func (m *MCP) callTool(ctx context.Context, p runtime.Principal, session string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// The call lives as long as its request, and reports progress while it
	// waits when the client asked for it (mcp_progress.go).
	w := m.watchCall(ctx, req)
	defer w.stop()
	ctx = w.ctx
	wait := 600.0
	call, err := m.h.RT.ToolCallCreate(ctx, p, runtime.ToolCallInput{Session: session, Tool: req.Params.Name,
		Input: req.Params.Arguments, WaitSeconds: &wait, Model: callModel(req), ClientInfo: callClient(req)})
	if e, ok := runtime.AsError(err); ok && e.Code == "unknown_tool" {
		// A tool the session does not offer is a protocol error, not a
		// tool's failure: JSON-RPC invalid params, as the MCP spec says.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Detail}
	}
	if e, ok := runtime.AsError(err); ok && e.Kind == runtime.KindInvalid {
		return toolError(e.Error()), nil
	}
	if e, ok := runtime.AsError(err); ok && (e.Code == runtime.CodeCapacity || e.Code == runtime.CodeToolChanged) {
		// A refused call, recorded as such: the model reads why and when to retry.
		return toolError("refused: " + e.Detail), nil
	}
	if err != nil {
		if w.gone() {
			w.cancelOpen(p, call)
		}
		return nil, err
	}
	if call.Open() && !w.gone() {
		// The client's patience is the request's context: wait until it ends.
		waited, err := m.h.RT.ToolCallWait(ctx, p, call.ID, 24*time.Hour)
		if err != nil && !w.gone() {
			return nil, err
		}
		if err == nil {
			call = waited
		}
	}
	if call.Open() && w.gone() {
		// Nobody will read the answer: the call ends here, and its approval
		// leaves the queues rather than run the tool for nobody.
		call = w.cancelOpen(p, call)
	}
	return callResult(call), nil
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// callResult turns a finished call into MCP's result: an MCP server's own
// answer passes on whole (mcpServerResult), a failed one too with its
// isError; other tools' JSON output is the text.
func callResult(call runtime.ToolCallView) *mcp.CallToolResult {
	switch call.Status {
	case runtime.CallRefused:
		return toolError("refused: " + call.Reason)
	case runtime.CallFailed:
		if res, ok := mcpServerResult(call); ok && res.IsError {
			return res
		}
		return toolError(call.Error)
	case runtime.CallSucceeded:
	default:
		return toolError("the call is still " + call.Status + " (" + call.ID + "): ToolCall.get will have its result")
	}
	if res, ok := mcpServerResult(call); ok {
		return res
	}
	res := &mcp.CallToolResult{}
	res.Content = []mcp.Content{&mcp.TextContent{Text: string(call.Output)}}
	var obj map[string]any
	if json.Unmarshal(call.Output, &obj) == nil {
		res.StructuredContent = obj
	}
	return res
}
