package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/codemode"
	"github.com/subako/subako/runtime/verbs"
)

// CodeMode is people's MCP endpoint, /mcp (issue 14, "Code mode"): a
// person's API token reaches Subako's own verbs as three tools, search,
// fetch and do, or (a token made with tools "flat") as one tool per verb it
// holds. Every verb a tool reaches is served by the very API route of that
// verb (dispatch), so its check, refusal and Action are the API's.
type CodeMode struct {
	h *Handlers
	// api serves the $ calls: the server's own router.
	api http.Handler
	// verbs lists the verbs the interfaces offer (the registry).
	verbs   func() []verbs.Verb
	handler http.Handler
	// running counts each person's programs running now (maxProgramsEach).
	mu      sync.Mutex
	running map[string]int
}

// maxProgramsEach bounds the programs one person runs at a time: each may
// hold a CPU for its deadline and its memory bound.
const maxProgramsEach = 4

// NewCodeMode builds /mcp. api is the router that serves /api/v1.
func NewCodeMode(h *Handlers, api http.Handler, list func() []verbs.Verb) *CodeMode {
	m := &CodeMode{h: h, api: api, verbs: list, running: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "subako", Title: "Subako (code mode)", Version: "1"},
		&mcp.ServerOptions{
			Instructions: "Subako's verbs as code: search finds verbs, records and docs; fetch reads one by id (or \"$.d.ts\", the typed client); do runs a TypeScript program against $ (await $.Noun.verb(input)).",
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" && method != "tools/call" {
				return next(ctx, method, req)
			}
			p, err := messagePrincipal(req)
			if err != nil {
				return nil, err
			}
			call := m.caller(ctx, p, req)
			if method == "tools/list" {
				return m.listTools(ctx, call)
			}
			return m.callTool(ctx, call, req.(*mcp.CallToolRequest))
		}
	})
	h2 := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout: 30 * time.Minute,
		// Every request carries a bearer token (no cookie is ever read here),
		// so DNS rebinding borrows nothing; see MCP.endpoint.
		DisableLocalhostProtection: true,
	})
	m.handler = auth.RequireBearerToken(h.mcpVerify, nil)(h2)
	return m
}

// Serve answers one HTTP request of /mcp (RequireBearer resolved its token).
func (m *CodeMode) Serve(c echo.Context) error {
	p := principal(c)
	if p.Kind != runtime.PrincipalUser {
		return &runtime.Error{Kind: runtime.KindForbidden, Code: "people_only", Title: "Forbidden",
			Detail: "/mcp is people's code mode: use a person's API token (a session's agent has /mcp/sessions/{session})"}
	}
	req := c.Request()
	req = req.WithContext(context.WithValue(context.WithValue(req.Context(), verifiedKey{}, p), originKey{}, origin{req.RemoteAddr, req.Host}))
	m.handler.ServeHTTP(c.Response(), req)
	return nil
}

// mcpVerify is MCP.verify without an endpoint: who RequireBearer found.
func (h *Handlers) mcpVerify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	return (&MCP{h: h}).verify(ctx, token, r)
}

// originKey carries the MCP request's remote address and Host to the $ calls
// it makes: the router serves them as it served the request.
type originKey struct{}

type origin struct{ remote, host string }

// caller is who a message acts as, and how its $ calls reach the API.
type caller struct {
	p      runtime.Principal
	authz  string // the Authorization header the message came with
	remote string
	host   string
	client string // "MCP <name/version>"
	model  string
}

func (m *CodeMode) caller(ctx context.Context, p runtime.Principal, req mcp.Request) caller {
	c := caller{p: p, client: "MCP", remote: "127.0.0.1:0"}
	if o, ok := ctx.Value(originKey{}).(origin); ok {
		c.remote, c.host = o.remote, o.host
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		c.authz = extra.Header.Get("Authorization")
		c.model = extra.Header.Get(ModelHeader)
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		if name := sessionClient(ss); name != "" {
			c.client = "MCP " + name
		}
	}
	if cr, ok := req.(*mcp.CallToolRequest); ok {
		if model := callModel(cr); model != "" {
			c.model = model
		}
	}
	return c
}

// offered is the verbs a principal holds that a tool can carry: not raw
// uploads (bytes are no JSON), not Program.run itself.
func (m *CodeMode) offered(p runtime.Principal) []verbs.Verb {
	var out []verbs.Verb
	for _, v := range m.verbs() {
		perm := v.Permission
		if perm == "" {
			perm = v.Name
		}
		if v.Body == verbs.BodyRaw || v.Name == "Program.run" || !p.Can(perm) {
			continue
		}
		out = append(out, v)
	}
	return out
}

func (m *CodeMode) listTools(ctx context.Context, c caller) (*mcp.ListToolsResult, error) {
	if m.h.RT.TokenTools(ctx, c.p) == runtime.TokenToolsFlat {
		return &mcp.ListToolsResult{Tools: m.flatTools(c.p)}, nil
	}
	return &mcp.ListToolsResult{Tools: codeTools()}, nil
}

func (m *CodeMode) callTool(ctx context.Context, c caller, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if m.h.RT.TokenTools(ctx, c.p) == runtime.TokenToolsFlat {
		return m.callFlat(ctx, c, req.Params.Name, args)
	}
	switch req.Params.Name {
	case "search":
		return m.search(ctx, c, args)
	case "fetch":
		return m.fetch(ctx, c, args)
	case "do":
		return m.do(ctx, c, args)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool " + req.Params.Name + ": /mcp offers search, fetch and do"}
}

// doInput is the do tool's input.
type doInput struct {
	Program string `json:"program"`
}

// do runs a program: its own Action (Program.run, with the text), then each
// $ call through the API route, linked to it.
func (m *CodeMode) do(ctx context.Context, c caller, args json.RawMessage) (*mcp.CallToolResult, error) {
	var in doInput
	if err := json.Unmarshal(args, &in); err != nil || in.Program == "" {
		return toolError("input.program: a TypeScript program is required, e.g. {\"program\": \"return await $.Agent.list({})\"}"), nil
	}
	m.mu.Lock()
	if m.running[c.p.ID] >= maxProgramsEach {
		m.mu.Unlock()
		return toolError(fmt.Sprintf("too_many_programs: %d of your programs are running; the limit is %d at a time", maxProgramsEach, maxProgramsEach)), nil
	}
	m.running[c.p.ID]++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		if m.running[c.p.ID]--; m.running[c.p.ID] <= 0 {
			delete(m.running, c.p.ID)
		}
		m.mu.Unlock()
	}()
	// $ holds every verb a program can call, not only those the token
	// holds: the API route decides, and its refusal is recorded and thrown
	// naming the missing permission (fetch "$.d.ts" types only the held ones).
	names := []string{}
	for _, v := range m.verbs() {
		if v.Body != verbs.BodyRaw && v.Name != "Program.run" {
			names = append(names, v.Name)
		}
	}
	var res codemode.Result
	var actionID string
	err := m.h.RT.ProgramRun(ctx, c.p, runtime.ProgramInput{Program: in.Program, Client: c.client, Model: c.model},
		func(ctx context.Context, id string) error {
			actionID = id
			call := func(ctx context.Context, name string, input json.RawMessage) (codemode.Answer, error) {
				if v, ok := m.verb(name); ok && takesSecret(v) {
					var in struct{ Secret any }
					if json.Unmarshal(input, &in) == nil {
						if s, ok := in.Secret.(string); ok {
							m.h.RT.RedactProgram(ctx, id, s)
						}
					}
					return codemode.Answer{}, &codemode.CallError{Code: "not_in_code_mode", Status: 422, Field: "secret",
						Message: name + " takes a secret, and a program's text is kept with its Action: set it with subako do, the API or the console"}
				}
				return m.answer(ctx, c, id, name, input)
			}
			var err error
			res, err = codemode.Run(ctx, in.Program, names, call, codemode.Limits{})
			return err
		})
	var ce *codemode.Error
	switch {
	case errors.As(err, &ce):
		return programResult(actionID, res, ce), nil
	case err != nil:
		if e, ok := runtime.AsError(err); ok {
			return toolError(e.Error()), nil
		}
		return nil, err
	}
	return programResult(actionID, res, nil), nil
}

// takesSecret: a verb whose input holds a secret is no $ call, since a
// program's text is kept (and shown on the Audit page) with its Action.
func takesSecret(v verbs.Verb) bool {
	if v.Input == nil {
		return false
	}
	_, ok := v.Input.Properties["secret"]
	return ok
}

// programOutput is what do answers.
type programOutput struct {
	Value  json.RawMessage `json:"value"`
	Log    []string        `json:"log"`
	Calls  int             `json:"calls"`
	Action string          `json:"action"`
	Error  *programError   `json:"error,omitempty"`
}

type programError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func programResult(action string, res codemode.Result, e *codemode.Error) *mcp.CallToolResult {
	out := programOutput{Value: res.Value, Log: res.Log, Calls: res.Calls, Action: action}
	if out.Log == nil {
		out.Log = []string{}
	}
	if out.Value == nil {
		out.Value = json.RawMessage("null")
	}
	if e != nil {
		out.Error = &programError{Code: e.Code, Message: e.Message}
	}
	b, _ := json.Marshal(out)
	var obj map[string]any
	_ = json.Unmarshal(b, &obj)
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: obj, IsError: e != nil}
	return r
}
