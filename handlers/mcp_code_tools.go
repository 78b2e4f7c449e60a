package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/docs"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/codemode"
	"github.com/subako/subako/runtime/verbs"
)

// Bounds of search and fetch.
const (
	maxSearchQuery   = 200
	defaultHits      = 20
	maxHits          = 50
	maxSnippet       = 240
	maxSectionBytes  = 16 << 10
	maxSearchRecords = 500 // items read from each list verb
)

func codeTools() []*mcp.Tool {
	obj := func(req []string, props map[string]*jsonschema.Schema) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "object", Required: req, Properties: props}
	}
	str := func(d string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: d} }
	return []*mcp.Tool{
		{Name: "search", Description: "Find Subako verbs (name and documentation), records this token may read (agents, versions, sessions, approvals, sandboxes, actions, skills, vaults, functions) and documentation sections, by words. Answers at most 50 hits, each with an id for fetch.",
			InputSchema: obj([]string{"query"}, map[string]*jsonschema.Schema{
				"query": str("words that must all appear (case does not matter), at most 200 characters"),
				"limit": {Type: "integer", Description: "hits to answer, 1 to 50 (default 20)"}})},
		{Name: "fetch", Description: "Read one thing by id: a verb (\"Approval.approve\": its route, permission and input/output schemas), a record (\"ses_…\", \"ag_…\"), a documentation section (\"docs/code-mode.md#Limits\"), or \"$.d.ts\" (the TypeScript declarations of $ for this token).",
			InputSchema: obj([]string{"id"}, map[string]*jsonschema.Schema{"id": str("what search answered as id, a verb name, or $.d.ts")})},
		{Name: "do", Description: "Run a short TypeScript program against $, the typed client of the verbs this token holds: `const list = await $.Approval.list({}); return list`. Top-level await and return work; console.log is kept. Each $ call is checked and recorded as the API's; a refused one throws an Error with .code and .missing_permission. Limits: 10 s, 64 MiB, 100 $ calls, 64 KiB program, 1 MiB value.",
			InputSchema: obj([]string{"program"}, map[string]*jsonschema.Schema{"program": str("TypeScript (types are stripped), at most 64 KiB")})},
	}
}

// hit is one search answer.
type hit struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // verb, record, doc
	Title   string `json:"title"`
	Snippet string `json:"snippet,omitempty"`
}

type searchInput struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

func (m *CodeMode) search(ctx context.Context, c caller, args json.RawMessage) (*mcp.CallToolResult, error) {
	var in searchInput
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Query) == "" {
		return toolError("input.query: words to look for are required"), nil
	}
	if n := utf8.RuneCountInString(in.Query); n > maxSearchQuery {
		return toolError(fmt.Sprintf("input.query is %d characters; the limit is %d", n, maxSearchQuery)), nil
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultHits
	}
	if limit > maxHits {
		return toolError(fmt.Sprintf("input.limit is %d; the limit is %d hits", limit, maxHits)), nil
	}
	terms := strings.Fields(strings.ToLower(in.Query))
	match := func(s string) bool {
		s = strings.ToLower(s)
		for _, t := range terms {
			if !strings.Contains(s, t) {
				return false
			}
		}
		return true
	}
	var hits []hit
	for _, v := range m.offered(c.p) {
		if match(v.Name + " " + v.Doc) {
			hits = append(hits, hit{ID: v.Name, Kind: "verb", Title: v.Name, Snippet: v.Method + " /api/v1" + v.Path + ": " + v.Doc})
		}
	}
	for _, r := range m.records(ctx, c) {
		if match(string(r.raw)) {
			hits = append(hits, hit{ID: r.id, Kind: "record", Title: r.title, Snippet: clip(string(r.raw), maxSnippet)})
		}
	}
	for _, s := range docSections() {
		if match(s.title + "\n" + s.text) {
			hits = append(hits, hit{ID: s.id, Kind: "doc", Title: s.title, Snippet: clip(s.text, maxSnippet)})
		}
	}
	more := len(hits) > limit
	if more {
		hits = hits[:limit]
	}
	return jsonResult(map[string]any{"results": hits, "more": more}), nil
}

// record is one item a list verb answered.
type record struct {
	id, title string
	raw       json.RawMessage
}

// searchLists are the list verbs search reads records through, each as the
// token may call it (a verb it does not hold is skipped, not refused).
var searchLists = []string{"Agent.list", "Session.list", "Approval.list", "Sandbox.list", "Skill.list",
	"Vault.list", "Function.list", "Action.list"}

func (m *CodeMode) records(ctx context.Context, c caller) []record {
	var out []record
	var agents []string
	for _, name := range searchLists {
		if v, ok := m.verb(name); !ok || !c.p.Can(perm(v)) {
			continue
		}
		raw, err := m.dispatch(ctx, c, "", name, json.RawMessage("{}"))
		if err != nil {
			continue
		}
		for _, r := range items(raw, name) {
			out = append(out, r)
			if name == "Agent.list" && len(agents) < 10 {
				agents = append(agents, r.id)
			}
		}
	}
	if v, ok := m.verb("Version.list"); ok && c.p.Can(perm(v)) {
		for _, a := range agents {
			in, _ := json.Marshal(map[string]string{"agent": a})
			if raw, err := m.dispatch(ctx, c, "", "Version.list", in); err == nil {
				out = append(out, items(raw, "Version.list")...)
			}
		}
	}
	return out
}

// items reads a list answer: an array, or the first array field of an object.
func items(raw json.RawMessage, verb string) []record {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if json.Unmarshal(obj[k], &list) == nil {
				break
			}
		}
	}
	var out []record
	for i, it := range list {
		if i >= maxSearchRecords {
			break
		}
		var f map[string]any
		if json.Unmarshal(it, &f) != nil {
			continue
		}
		id, _ := f["id"].(string)
		if id == "" {
			continue
		}
		title := verbs.Verb{Name: verb}.Noun() + " " + id
		for _, k := range []string{"name", "verb", "tool", "state", "status"} {
			if s, ok := f[k].(string); ok && s != "" {
				title += " " + s
				break
			}
		}
		out = append(out, record{id: id, title: title, raw: it})
	}
	return out
}

type fetchInput struct {
	ID string `json:"id"`
}

func (m *CodeMode) fetch(ctx context.Context, c caller, args json.RawMessage) (*mcp.CallToolResult, error) {
	var in fetchInput
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.ID) == "" {
		return toolError("input.id is required: a verb name, a record id, a docs/… id or $.d.ts"), nil
	}
	id := strings.TrimSpace(in.ID)
	switch {
	case id == "$.d.ts" || id == "/$.d.ts":
		// The typed client's declarations, cut to this token (GET /api/v1/$.d.ts).
		body, _ := m.h.ClientTypes(c.p)
		return textResult(string(body)), nil
	case strings.HasPrefix(id, "docs/"):
		for _, s := range docSections() {
			if s.id == id {
				return textResult(clip(s.text, maxSectionBytes)), nil
			}
		}
		return toolError("no documentation section " + id + ": search answers their ids"), nil
	}
	if v, ok := m.verb(id); ok {
		for _, o := range m.offered(c.p) {
			if o.Name == v.Name {
				return jsonResult(verbTypes(v)), nil
			}
		}
		return toolError(fmt.Sprintf("%s is not a verb this token holds (missing permission %s)", v.Name, perm(v))), nil
	}
	return m.fetchRecord(ctx, c, id)
}

// fetchRecord reads a record by id through its noun's get verb (the id's
// prefix names the noun), or finds it in its list.
func (m *CodeMode) fetchRecord(ctx context.Context, c caller, id string) (*mcp.CallToolResult, error) {
	prefix, _, _ := strings.Cut(id, "_")
	noun := map[string]string{"ag": "Agent", "ver": "Version", "ses": "Session", "sk": "Skill", "vlt": "Vault",
		"call": "ToolCall", "apr": "Approval", "act": "Action", "sbx": "Sandbox", "sb": "Sandbox"}[prefix]
	if noun == "" {
		return toolError("no record " + id + ": fetch takes an id search answered, a verb name, or $.d.ts"), nil
	}
	if v, ok := m.verb(noun + ".get"); ok {
		param := ""
		for _, s := range strings.Split(v.Path, "/") {
			if strings.HasPrefix(s, ":") {
				param = s[1:]
				break
			}
		}
		in, _ := json.Marshal(map[string]string{param: id})
		raw, err := m.dispatch(ctx, c, "", v.Name, in)
		if err != nil {
			return toolError(callErrorText(v.Name, err)), nil
		}
		return textResult(string(raw)), nil
	}
	list := noun + ".list"
	raw, err := m.dispatch(ctx, c, "", list, json.RawMessage("{}"))
	if err != nil {
		return toolError(callErrorText(list, err)), nil
	}
	for _, r := range items(raw, list) {
		if r.id == id {
			return textResult(string(r.raw)), nil
		}
	}
	return toolError("no " + noun + " " + id + " this token may read"), nil
}

func callErrorText(verb string, err error) string {
	if ce, ok := err.(*codemode.CallError); ok {
		s := verb + ": " + ce.Code + ": " + ce.Message
		if ce.MissingPermission != "" {
			s += " (missing permission " + ce.MissingPermission + ")"
		}
		return s
	}
	return verb + ": " + err.Error()
}

func (m *CodeMode) verb(name string) (verbs.Verb, bool) {
	for _, v := range m.verbs() {
		if v.Name == name {
			return v, true
		}
	}
	return verbs.Verb{}, false
}

func perm(v verbs.Verb) string {
	if v.Permission != "" {
		return v.Permission
	}
	return v.Name
}

// verbTypes is one verb as fetch shows it.
func verbTypes(v verbs.Verb) map[string]any {
	return map[string]any{"name": v.Name, "call": "await $." + v.Name + "(input)", "route": v.Method + " /api/v1" + v.Path,
		"permission": perm(v), "doc": v.Doc, "input": v.Input, "output": v.Output}
}

// Flat mode: one tool per verb the token holds.

func (m *CodeMode) flatTools(p runtime.Principal) []*mcp.Tool {
	out := []*mcp.Tool{}
	for _, v := range m.offered(p) {
		in := v.Input
		if in == nil {
			in = &jsonschema.Schema{Type: "object"}
		}
		t := &mcp.Tool{Name: v.Name, Description: v.Doc, InputSchema: in,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: v.Read}}
		out = append(out, t)
	}
	return out
}

func (m *CodeMode) callFlat(ctx context.Context, c caller, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	held := false
	for _, v := range m.offered(c.p) {
		held = held || v.Name == name
	}
	if _, known := m.verb(name); !known {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool " + name}
	}
	_ = held // a verb the token lacks is refused (and recorded) by the API route itself
	a, err := m.serveVerb(ctx, c, "", name, args)
	if err != nil {
		return toolError(callErrorText(name, err)), nil
	}
	if a.Bytes {
		return m.downloadResult(a), nil
	}
	raw := a.Body
	res := textResult(string(raw))
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		res.StructuredContent = obj
	}
	return res, nil
}

// downloadResult is a download (Volume.get, Sandbox.readFile,
// Archive.download) as a flat tool's result: text as text, and anything
// else (an archive, an image, a file that is not UTF-8) as an embedded
// resource's blob, which the protocol carries in base64, named by its
// route. As text, its bytes would not survive: JSON replaces what is not
// UTF-8.
func (m *CodeMode) downloadResult(a verbAnswer) *mcp.CallToolResult {
	body := a.Body
	if utf8.Valid(body) && !bytes.ContainsRune(body, 0) {
		return textResult(string(body))
	}
	mediaType := a.mediaType
	if mediaType == "" || strings.HasPrefix(mediaType, "application/octet-stream") {
		mediaType = http.DetectContentType(body)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
		URI: strings.TrimSuffix(m.h.BaseURL, "/") + a.target, MIMEType: mediaType, Blob: body}}}}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func jsonResult(v any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	var obj map[string]any
	_ = json.Unmarshal(b, &obj)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: obj}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// section is one heading of docs/*.md and the text under it.
type section struct{ id, title, text string }

// docSections reads the embedded docs into sections by heading.
func docSections() []section {
	var out []section
	files, _ := fs.Glob(docs.FS, "*.md")
	for _, f := range files {
		b, err := fs.ReadFile(docs.FS, f)
		if err != nil {
			continue
		}
		var cur *section
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") {
				title := strings.TrimSpace(strings.TrimLeft(line, "#"))
				out = append(out, section{id: "docs/" + f + "#" + title, title: f + ": " + title})
				cur = &out[len(out)-1]
				continue
			}
			if cur != nil && len(cur.text) < maxSectionBytes {
				cur.text += line + "\n"
			}
		}
	}
	return out
}
