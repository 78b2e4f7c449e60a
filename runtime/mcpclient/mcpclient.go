package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxPages bounds tools/list pagination, so a server handing out cursors
// forever cannot hold a caller for longer than it takes to notice.
const maxPages = 100

// Tool is one tool a server offers, as tools/list describes it.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	// Passed on whole: the title, annotations, output schema and _meta the
	// server listed (nil when it listed none).
	Title        string
	Annotations  json.RawMessage
	OutputSchema json.RawMessage
	Meta         json.RawMessage
}

// Result is what a tools/call answered.
type Result struct {
	Content    json.RawMessage // the MCP content list, as JSON
	Text       string          // the text parts of Content, joined by newlines
	Structured json.RawMessage // structuredContent, when the server sent one
	IsError    bool            // the tool itself reported failure
	Meta       json.RawMessage // the result's _meta, when the server sent one
}

// Skipped is a tool the server listed that discovery did not keep, and why.
type Skipped struct {
	Name   string // as listed, cut to maxNameShown bytes
	Reason string
}

// Discovery is what tools/list answered, within the pool's limits.
type Discovery struct {
	Tools   []Tool
	Skipped []Skipped
	// Unlisted counts the tools listed past Options.MaxTools on the pages
	// read: nothing of them is kept, not even their names.
	Unlisted int
	// More says the server had further pages once the list was full; they
	// were not read, so a server cannot make a refresh read on and on.
	More bool
}

// maxNameShown is the longest tool name kept, and where the name of a
// skipped tool is cut: a name is the server's to choose, and a skipped one is
// only shown to say what was left out.
const maxNameShown = 128

// Discover lists every tool of the server at url, following tools/list
// pages, over the cached session for (url, sessionKey).
func (p *Pool) Discover(ctx context.Context, url, sessionKey string, attach func(*http.Request)) (Discovery, error) {
	var d Discovery
	err := p.do(ctx, url, sessionKey, attach, func(ctx context.Context, cs *mcp.ClientSession) error {
		d = Discovery{}
		return p.listAll(ctx, cs, &d)
	})
	return d, err
}

func (p *Pool) listAll(ctx context.Context, cs *mcp.ClientSession, d *Discovery) error {
	cursor := ""
	var kept int64 // bytes of names, descriptions and schemas kept
	// Names already kept: a model API refuses a tool list that names one
	// tool twice, so a server listing a name twice must not break the session.
	seen := map[string]bool{}
	for range maxPages {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return err
		}
		for _, t := range res.Tools {
			if len(d.Tools)+len(d.Skipped) >= p.opts.MaxTools {
				d.Unlisted++
				continue
			}
			tool, why := p.keep(t, kept)
			if why == "" && seen[tool.Name] {
				why = "the server lists this name more than once; only the first is kept"
			}
			if why != "" {
				d.Skipped = append(d.Skipped, Skipped{Name: cut(t.Name, maxNameShown), Reason: why})
				continue
			}
			kept += tool.size()
			seen[tool.Name] = true
			d.Tools = append(d.Tools, tool)
		}
		if res.NextCursor == "" {
			return nil
		}
		if len(d.Tools)+len(d.Skipped) >= p.opts.MaxTools {
			d.More = true
			return nil
		}
		if res.NextCursor == cursor {
			return fmt.Errorf("tools/list returned the cursor %q it was given", cut(cursor, maxNameShown))
		}
		cursor = res.NextCursor
	}
	return fmt.Errorf("tools/list went on for more than %d pages", maxPages)
}

// keep checks one listed tool against the discovery limits; kept is what
// the tools before it already hold.
func (p *Pool) keep(t *mcp.Tool, kept int64) (Tool, string) {
	o := p.opts
	if n := len(t.Name); n == 0 || n > maxNameShown {
		// The MCP spec's own bound on a tool name; no client takes a longer one.
		return Tool{}, fmt.Sprintf("its name is %d bytes; MCP tool names are 1 to %d characters", n, maxNameShown)
	}
	if n := len(t.Description); n > o.MaxDescriptionBytes {
		return Tool{}, fmt.Sprintf("its description is %d bytes; the limit is %s (--mcp-max-description-bytes)", n, sizeWords(int64(o.MaxDescriptionBytes)))
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return Tool{}, fmt.Sprintf("its input schema could not be read: %v", err)
	}
	if n := len(schema); n > o.MaxSchemaBytes {
		return Tool{}, fmt.Sprintf("its input schema is %d bytes; the limit is %s (--mcp-max-schema-bytes)", n, sizeWords(int64(o.MaxSchemaBytes)))
	}
	tool := Tool{Name: t.Name, Description: t.Description, InputSchema: schema, Title: t.Title}
	if why := p.keepExtras(t, &tool); why != "" {
		return Tool{}, why
	}
	if kept+tool.size() > o.MaxResponseBytes {
		return Tool{}, fmt.Sprintf("the tools listed before it already fill the %s a tool list may hold (--mcp-max-response-bytes)", sizeWords(o.MaxResponseBytes))
	}
	return tool, ""
}

// cut shortens s to at most n bytes without splitting a character, marking
// that it was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// Call calls tool with args (a JSON object, or empty for none) over the
// cached session for (url, sessionKey). A tool that reports failure is not
// an error: its Result has IsError set.
func (p *Pool) Call(ctx context.Context, url, sessionKey string, attach func(*http.Request), tool string, args json.RawMessage) (Result, error) {
	params, err := callParams(tool, args)
	if err != nil {
		return Result{}, err
	}
	var res *mcp.CallToolResult
	defer withProgressToken(ctx, params)()
	err = p.do(ctx, url, sessionKey, attach, func(ctx context.Context, cs *mcp.ClientSession) error {
		res, err = cs.CallTool(ctx, params)
		return p.checkUnknown(ctx, cs, tool, res, err)
	})
	if err != nil {
		return Result{}, err
	}
	return toResult(res)
}

func callParams(tool string, args json.RawMessage) (*mcp.CallToolParams, error) {
	if tool == "" {
		return nil, errors.New("mcpclient: tool name is required")
	}
	params := &mcp.CallToolParams{Name: tool}
	trimmed := bytes.TrimSpace(args)
	switch {
	case len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")):
		// The SDK sends {} for no arguments.
	case trimmed[0] != '{' || !json.Valid(trimmed):
		return nil, fmt.Errorf("mcpclient: arguments for tool %q must be a JSON object", tool)
	default:
		params.Arguments = json.RawMessage(trimmed)
	}
	return params, nil
}

// checkUnknown turns a failed call of a tool the server does not list into
// an unknownToolError. Servers report an unknown tool differently (the
// TypeScript SDK as an isError result, the Go SDK as a JSON-RPC error), so
// the list decides; it is fetched only when a call failed.
func (p *Pool) checkUnknown(ctx context.Context, cs *mcp.ClientSession, tool string, res *mcp.CallToolResult, err error) error {
	var rpc *jsonrpc.Error
	failed := (err == nil && res.IsError) || (errors.As(err, &rpc) && rpc.Code != codeRejected)
	if !failed {
		return err
	}
	var d Discovery
	if p.listAll(ctx, cs, &d) != nil || d.Unlisted > 0 || d.More {
		return err // a list cut short cannot say a tool is missing
	}
	for _, t := range d.Tools {
		if t.Name == tool {
			return err
		}
	}
	for _, t := range d.Skipped {
		if t.Name == tool {
			return err
		}
	}
	return &unknownToolError{tool: tool}
}

func toResult(res *mcp.CallToolResult) (Result, error) {
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return Result{}, fmt.Errorf("mcpclient: encode tool result: %w", err)
	}
	out := Result{Content: raw, IsError: res.IsError}
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	out.Text = strings.Join(texts, "\n")
	if len(res.Meta) > 0 {
		if out.Meta, err = json.Marshal(res.Meta); err != nil {
			return Result{}, fmt.Errorf("mcpclient: encode result _meta: %w", err)
		}
	}
	if res.StructuredContent != nil {
		if out.Structured, err = json.Marshal(res.StructuredContent); err != nil {
			return Result{}, fmt.Errorf("mcpclient: encode structured content: %w", err)
		}
	}
	return out, nil
}

// do runs op on the cached session for (url, sessionKey), bounded by the
// pool's timeout. A session the server has forgotten (a restart, its own
// idle timeout) is replaced and op retried once: the server refused the
// request without running it.
func (p *Pool) do(ctx context.Context, url, sessionKey string, attach func(*http.Request), op func(context.Context, *mcp.ClientSession) error) error {
	if _, err := parseEndpoint(url); err != nil {
		return err
	}
	hasCredential := attach != nil
	for attempt := 0; ; attempt++ {
		e, err := p.acquire(ctx, url, sessionKey, attach)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return err
			}
			return explain(url, hasCredential, err)
		}
		opCtx, cancel := context.WithTimeoutCause(ctx, p.opts.Timeout, &timeoutError{p.opts.Timeout})
		err = op(opCtx, e.cs)
		if err != nil && opCtx.Err() != nil && ctx.Err() == nil {
			err = context.Cause(opCtx)
		}
		if err != nil && e.overLimit.Load() {
			// Whatever the SDK made of the cut body, the cause is its size.
			err = &tooLargeError{limit: p.opts.MaxResponseBytes}
		}
		cancel()
		// An unknown tool is an answer from a working session: keep it.
		p.release(e, err != nil && !errors.As(err, new(*unknownToolError)))
		if err == nil {
			return nil
		}
		if attempt == 0 && errors.Is(err, mcp.ErrSessionMissing) {
			continue
		}
		return explain(url, hasCredential, err)
	}
}
