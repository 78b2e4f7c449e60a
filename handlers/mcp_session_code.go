package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/codemode"
)

// A session whose version says tools_as "code" lists three tools instead of
// its own (runtime/sessioncode.go): search and fetch read the session's
// offered tools as the typed client $, do runs a TypeScript program against
// it, each $ call a ToolCall.create of its own.

// sessionCodeTools are the three tools of a session in code mode.
func sessionCodeTools() []*mcp.Tool {
	return []*mcp.Tool{
		{Name: "search", Title: "Search this session's tools",
			Description: "Find this session's tools by text (name, description, kind, grant): each with how a program calls it ($.mcp.everything.echo), its policy (allow, or ask: the call waits for a person's approval) and description. An empty query lists them all.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","maxLength":500,"description":"Words that must all occur, e.g. \"sandbox exec\". Empty lists every tool."}},"additionalProperties":false}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "fetch", Title: "Read a tool's TypeScript types",
			Description: "The TypeScript declarations of one tool of $ (give its path, e.g. \"mcp.everything.echo\"), or of the whole $ of this session (give \"$.d.ts\" or nothing).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","maxLength":1000,"description":"A tool's path in $ (\"sandbox.workbench.exec\") or its flat name; \"$.d.ts\" or empty for every tool."}},"additionalProperties":false}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "do", Title: "Run a program against this session's tools",
			Description: "Run a short TypeScript program against $, this session's tools: `const r = await $.mcp.everything.echo({message: \"hi\"}); return r.text`. Top-level await and return work; console.log is kept. Each $ call is a tool call like any other, with its policy, its approval (the program waits for an ask-first call's decision) and its record; a refused or failed call throws an Error with .code and .message (catch it to go on). Limits: 10 s, or 60 s when a tool may ask first (its approval must come within it; a call still waiting then is cancelled), 100 $ calls, 64 KiB program, 1 MiB value.",
			InputSchema: json.RawMessage(`{"type":"object","required":["program"],"properties":{"program":{"type":"string","minLength":1,"maxLength":65536,"description":"TypeScript; types are stripped. At most 64 KiB."}},"additionalProperties":false}`)},
	}
}

// serveCode answers tools/list and tools/call of a session in code mode.
func (m *MCP) serveCode(ctx context.Context, p runtime.Principal, session, method string, req mcp.Request) (mcp.Result, error) {
	if method == "tools/list" {
		// Session.tools, as the flat list is: the same check and record.
		if _, err := m.h.RT.SessionTools(ctx, p, session, false); err != nil {
			return nil, err
		}
		return &mcp.ListToolsResult{Tools: sessionCodeTools()}, nil
	}
	call := req.(*mcp.CallToolRequest)
	args := call.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	switch call.Params.Name {
	case "search":
		var in struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return toolError("input.query must be a string: " + err.Error()), nil
		}
		return m.codeSearch(ctx, p, session, in.Query)
	case "fetch":
		var in struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return toolError("input.name must be a string: " + err.Error()), nil
		}
		return m.codeFetch(ctx, p, session, in.Name)
	case "do":
		var in struct {
			Program string `json:"program"`
		}
		if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Program) == "" {
			return toolError(`input.program: a TypeScript program is required, e.g. {"program": "return await $.mcp.everything.echo({message: \"hi\"})"}`), nil
		}
		return m.codeDo(ctx, p, session, in.Program, callClient(call), callModel(call))
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"unknown tool %s: this session offers its tools as code (its version's tools_as): search, fetch and do", call.Params.Name)}
}

// codeSearchHit is one tool search finds.
type codeSearchHit struct {
	Call        string `json:"call"` // $.mcp.everything.echo
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Grant       string `json:"grant"`
	Policy      string `json:"policy,omitempty"`
	Description string `json:"description,omitempty"`
}

// maxSearchHits bounds one search's answer.
const maxSearchHits = 50

func (m *MCP) codeSearch(ctx context.Context, p runtime.Principal, session, query string) (*mcp.CallToolResult, error) {
	if len(query) > 500 {
		return toolError(fmt.Sprintf("input.query must be at most 500 bytes; it has %d", len(query))), nil
	}
	sc, err := m.h.RT.SessionCodeTools(ctx, p, session)
	if err != nil {
		return nil, err
	}
	found := runtime.SearchCodeTools(sc.Tools, query)
	out := struct {
		Tools []codeSearchHit `json:"tools"`
		More  int             `json:"more,omitempty"`
	}{Tools: []codeSearchHit{}}
	for i, t := range found {
		if i == maxSearchHits {
			out.More = len(found) - i
			break
		}
		out.Tools = append(out.Tools, codeSearchHit{Call: t.Expr(), Name: t.Name, Kind: t.Kind, Grant: t.Grant, Policy: t.Policy, Description: t.Description})
	}
	return jsonResult(out), nil
}

func (m *MCP) codeFetch(ctx context.Context, p runtime.Principal, session, name string) (*mcp.CallToolResult, error) {
	sc, err := m.h.RT.SessionCodeTools(ctx, p, session)
	if err != nil {
		return nil, err
	}
	if len(name) > 1000 {
		return toolError(fmt.Sprintf("input.name must be at most 1000 bytes; it has %d", len(name))), nil
	}
	name = strings.TrimSpace(name)
	if name == "" || name == "$.d.ts" || name == "$" {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: runtime.CodeTypes(sc.Tools)}}}, nil
	}
	t, ok := runtime.FindCodeTool(sc.Tools, name)
	if !ok {
		return toolError(fmt.Sprintf("input.name: this session offers no tool %q; search lists them (a denied tool is not offered)", name)), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: runtime.CodeTypes([]runtime.CodeTool{t})}}}, nil
}

func (m *MCP) codeDo(ctx context.Context, p runtime.Principal, session, program, client, model string) (*mcp.CallToolResult, error) {
	// Answered as people's /mcp answers its do (programResult): value, log,
	// calls, the program's Action, and why it stopped when it did not finish.
	res, action, err := m.h.RT.SessionProgram(ctx, p, runtime.SessionProgramInput{Session: session, Program: program, Client: client, Model: model})
	var ce *codemode.Error
	switch {
	case errors.As(err, &ce):
		return programResult(action, res, ce), nil
	case err != nil:
		if e, ok := runtime.AsError(err); ok && e.Kind != runtime.KindInternal {
			return toolError(e.Error()), nil
		}
		return nil, err
	}
	return programResult(action, res, nil), nil
}
