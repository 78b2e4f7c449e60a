package runtime

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/runtime/tsgen"
)

// A session of a version whose tools_as is "code" offers its tools to its
// agent as a typed client, $, instead of one MCP tool each: the agent
// searches them, fetches their TypeScript declarations and runs a program
// (sessioncode_do.go) whose every $ call is a ToolCall.create of its own.
// $ holds the offered tools by kind, grant and tool:
// mcp__everything__echo is $.mcp.everything.echo, sandbox__workbench__exec
// $.sandbox.workbench.exec. Denied tools are not offered, so not in $.

// CodeTool is one offered tool as code mode shows it.
type CodeTool struct {
	// Path is where $ holds it: ["mcp", "everything", "echo"].
	Path        []string        `json:"path"`
	Name        string          `json:"name"` // the flat name, mcp__everything__echo
	Kind        string          `json:"kind"`
	Grant       string          `json:"grant"`
	Tool        string          `json:"tool"`
	Description string          `json:"description,omitempty"`
	Policy      string          `json:"policy,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema is the server's outputSchema of an MCP tool, the type of
	// its answer's structured part.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// mayWait: a call may wait for a person (ask first, an argument rule
	// that asks, ask_user's answer, a client's tool).
	mayWait bool
}

// Dotted is the tool's path as the program names it: "mcp.everything.echo".
func (t CodeTool) Dotted() string { return strings.Join(t.Path, ".") }

// Expr is how a program calls it: $.mcp.everything.echo, or
// $.mcp.everything["get-sum"] for a part that is not an identifier.
func (t CodeTool) Expr() string {
	var b strings.Builder
	b.WriteString("$")
	for _, p := range t.Path {
		if jsIdent(p) {
			b.WriteString("." + p)
		} else {
			q, _ := json.Marshal(p)
			b.WriteString("[" + string(q) + "]")
		}
	}
	return b.String()
}

func jsIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// SessionCode is a session's tools as code mode offers them.
type SessionCode struct {
	// Code: the session's version says tools_as "code".
	Code    bool
	Version string
	Tools   []CodeTool
}

// SessionCodeTools is Session.tools as code mode sees it: whether the
// session's version offers its tools as code, and its offered tools by $
// path. It is Session.tools (the same check and record).
func (r *Runtime) SessionCodeTools(ctx context.Context, p Principal, id string) (SessionCode, error) {
	offered, err := r.SessionTools(ctx, p, id, false)
	if err != nil {
		return SessionCode{}, err
	}
	s, err := r.loadSession(ctx, p, id)
	if err != nil {
		return SessionCode{}, err
	}
	v, err := r.loadVersion(ctx, s.VersionID)
	if err != nil {
		return SessionCode{}, err
	}
	return SessionCode{Code: versionView(v).Parsed().CodeMode(), Version: v.ID, Tools: codeTools(offered)}, nil
}

// SessionIsCode reports whether a session's MCP endpoint offers code mode.
// The endpoint asks on every tools/list and tools/call, so it is answered
// from the hot path's memory once warm: a warm call reads nothing more
// (TestMCPEndpointAddsNoStatementsToACall).
func (r *Runtime) SessionIsCode(ctx context.Context, p Principal, id string) (bool, error) {
	s, err := r.hotSession(ctx, p, id)
	if err != nil {
		return false, err
	}
	now := r.now()
	if code, ok := r.hot.codeMode.get(r.hot, s.VersionID, now); ok {
		return code, nil
	}
	gen := r.hot.gen.Load()
	v, err := r.loadVersion(ctx, s.VersionID)
	if err != nil {
		return false, err
	}
	code := versionView(v).Parsed().CodeMode()
	r.hot.codeMode.put(r.hot, s.VersionID, gen, now, code)
	return code, nil
}

// CodeExpr is how a code-mode program calls the offered tool named name
// ($.mcp.everything.echo), or "" for a name that is not a tool's full name.
func CodeExpr(name string) string {
	if ts := codeTools([]OfferedTool{{Name: name}}); len(ts) == 1 {
		return ts[0].Expr()
	}
	return ""
}

func codeTools(offered []OfferedTool) []CodeTool {
	out := make([]CodeTool, 0, len(offered))
	for _, t := range offered {
		kind, grant, tool, err := tools.ParseFullName(t.Name)
		if err != nil {
			continue // every offered name parses; a stray one is not callable as code
		}
		out = append(out, CodeTool{Path: []string{kind, grant, tool}, Name: t.Name, Kind: kind, Grant: grant, Tool: tool,
			Description: t.Description, Policy: t.Policy, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
			mayWait: t.Policy != tools.PolicyAllow || len(t.Rules) > 0})
	}
	return out
}

// FindCodeTool finds a tool by its $ path ("mcp.everything.echo", with or
// without "$."), its expression ($.mcp.everything["get-sum"]) or its flat name.
func FindCodeTool(ts []CodeTool, name string) (CodeTool, bool) {
	name = strings.TrimSpace(name)
	i := slices.IndexFunc(ts, func(t CodeTool) bool {
		return t.Name == name || t.Dotted() == strings.TrimPrefix(name, "$.") || t.Expr() == name
	})
	if i < 0 {
		return CodeTool{}, false
	}
	return ts[i], true
}

// SearchCodeTools finds tools by text: every word of the query must occur
// in the tool's name, $ path, kind, grant or description (case folded).
// An empty query finds them all.
func SearchCodeTools(ts []CodeTool, query string) []CodeTool {
	words := strings.Fields(strings.ToLower(query))
	out := []CodeTool{}
	for _, t := range ts {
		hay := strings.ToLower(strings.Join([]string{t.Name, t.Dotted(), t.Kind, t.Grant, t.Tool, t.Description, t.Policy}, " "))
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(hay, w) }) {
			out = append(out, t)
		}
	}
	return out
}

// CodeTypes is the TypeScript declarations of $ holding ts: each tool's
// input type from its input schema and its answer's type (codeOutput).
func CodeTypes(ts []CodeTool) string {
	funcs := make([]tsgen.Func, 0, len(ts))
	for _, t := range ts {
		doc := t.Description
		if t.Policy == tools.PolicyAsk {
			doc = strings.TrimSpace(doc + "\n\nAsk first: the call waits for a person's approval.")
		}
		funcs = append(funcs, tsgen.Func{Path: t.Path, Doc: doc, Input: schemaOf(t.InputSchema), Output: codeOutput(t)})
	}
	// tsgen's header declares the SubakoError the API's calls throw; a
	// session's $ throws what programCall says, so it says that instead.
	out := tsgen.Client(funcs)
	if i := strings.Index(out, "declare const $"); i >= 0 {
		out = codeTypesHeader + out[i:]
	}
	return out
}

const codeTypesHeader = `// This session's tools as $, by kind and grant, typed from their schemas.
// Each call is a tool call of the session: checked by its policy, waiting for
// approval when it asks first, recorded. A refused or failed call throws an
// Error with .code ("refused", "tool_failed", "call_unfinished", or why the
// input was refused) and .message (the reason).
`

func schemaOf(raw json.RawMessage) *jsonschema.Schema {
	if len(raw) == 0 {
		return nil
	}
	var s jsonschema.Schema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return &s
}

// mcpAnswerSchema is what a $ call of an MCP server's tool answers: the
// server's answer as ToolCall.get records it (mcpresult.go).
const mcpAnswerSchema = `{"type": "object", "required": ["content", "text", "is_error"], "properties": {
  "content": {"type": "array", "description": "The server's content blocks, whole (text, image, resource…).", "items": {"type": "object"}},
  "text": {"type": "string", "description": "The text blocks joined."},
  "structured": {"description": "The server's structuredContent, when it gave one."},
  "is_error": {"type": "boolean"}}}`

// codeOutput is the type a tool's $ call answers: an MCP tool's recorded
// answer with structured typed by its outputSchema; other kinds' output as
// their executors write it (unknown to the types).
func codeOutput(t CodeTool) *jsonschema.Schema {
	if t.Kind != tools.KindMCP {
		return schemaOf(t.OutputSchema)
	}
	s := schemaOf(json.RawMessage(mcpAnswerSchema))
	if out := schemaOf(t.OutputSchema); out != nil && s != nil {
		if out.Description == "" {
			out.Description = "The server's structuredContent, typed by the tool's outputSchema."
		}
		s.Properties["structured"] = out
	}
	return s
}
