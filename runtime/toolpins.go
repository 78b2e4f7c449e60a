package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// Tool definitions pinned at publish (issue 12 item 4). While a version is a
// draft, "Fetch tools" (Version.fetchTools) lists an MCP server's tools and
// keeps them with the draft, so its tool rules are checked against them;
// publishing freezes that list. A session of the version offers the pinned
// definitions, refuses a tool the server has changed since (tool_changed),
// and treats a tool the server added per the grant's new_tools. A version
// with no pins (published before pinning, or never fetched) offers what the
// server lists, as before.

// PinnedTool is one tool definition as pinned: the fields that decide what
// a model is told and what it sends (a title is shown to it as a
// description is; an output schema says what it gets back), and their hash.
type PinnedTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Hash         string          `json:"hash"`
}

// pinOf is a tool's definition with its hash, over its JSON with sorted keys,
// so the same definition listed in another key order hashes the same.
func pinOf(d tools.ToolDef) PinnedTool {
	p := PinnedTool{Name: d.Name, Title: d.Title, Description: d.Description, InputSchema: canonicalJSON(d.InputSchema),
		Annotations: canonicalJSON(d.Annotations), OutputSchema: canonicalJSON(d.OutputSchema)}
	if len(p.InputSchema) == 0 {
		p.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	// A tool without a title or an output schema hashes as before they were pinned.
	b, _ := json.Marshal(struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		Annotations  json.RawMessage `json:"annotations,omitempty"`
		Title        string          `json:"title,omitempty"`
		OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	}{p.Name, p.Description, p.InputSchema, p.Annotations, p.Title, p.OutputSchema})
	sum := sha256.Sum256(b)
	p.Hash = "sha256:" + hex.EncodeToString(sum[:])
	return p
}

// canonicalJSON re-encodes JSON with sorted keys and its numbers as written;
// nil for nothing, null or invalid JSON.
func canonicalJSON(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// ToolChange is one difference between the pinned tools of an MCP grant and
// what its server lists now.
type ToolChange struct {
	Grant  string `json:"grant"`
	Tool   string `json:"tool"`
	Change string `json:"change"` // added, removed, changed
	// Fields are the definition's fields that changed: title, description,
	// input_schema, annotations, output_schema; Details says how, for people.
	Fields  []string `json:"fields,omitempty"`
	Details []string `json:"details,omitempty"`
}

// Changes of a tool.
const (
	ToolAdded   = "added"
	ToolRemoved = "removed"
	ToolChanged = "changed"
)

// CodeToolChanged is the code of a call refused because the server changed
// the tool since the version pinned it.
const CodeToolChanged = "tool_changed"

// compareTool says what changed from a pinned definition to the one listed
// now; nil when they are the same.
func compareTool(grant string, pinned, now PinnedTool) *ToolChange {
	if pinned.Hash == now.Hash {
		return nil
	}
	c := &ToolChange{Grant: grant, Tool: pinned.Name, Change: ToolChanged}
	if pinned.Title != now.Title {
		c.Fields = append(c.Fields, "title")
		c.Details = append(c.Details, "title changed")
	}
	if pinned.Description != now.Description {
		c.Fields = append(c.Fields, "description")
		c.Details = append(c.Details, "description changed")
	}
	if !bytes.Equal(pinned.InputSchema, now.InputSchema) {
		c.Fields = append(c.Fields, "input_schema")
		c.Details = append(c.Details, "input_schema: "+schemaChange(pinned.InputSchema, now.InputSchema))
	}
	if !bytes.Equal(pinned.Annotations, now.Annotations) {
		c.Fields = append(c.Fields, "annotations")
		c.Details = append(c.Details, "annotations changed")
	}
	if !bytes.Equal(pinned.OutputSchema, now.OutputSchema) {
		c.Fields = append(c.Fields, "output_schema")
		c.Details = append(c.Details, "output_schema changed")
	}
	return c
}

// schemaChange names the properties an input schema gained, lost or changed.
func schemaChange(a, b json.RawMessage) string {
	type schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	var sa, sb schema
	_ = json.Unmarshal(a, &sa)
	_ = json.Unmarshal(b, &sb)
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sa.Properties)) {
		if nb, ok := sb.Properties[k]; !ok {
			parts = append(parts, fmt.Sprintf("property %q removed", k))
		} else if !bytes.Equal(canonicalJSON(sa.Properties[k]), canonicalJSON(nb)) {
			parts = append(parts, fmt.Sprintf("property %q changed", k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sb.Properties)) {
		if _, ok := sa.Properties[k]; !ok {
			parts = append(parts, fmt.Sprintf("property %q added", k))
		}
	}
	slices.Sort(sa.Required)
	slices.Sort(sb.Required)
	if !slices.Equal(sa.Required, sb.Required) {
		parts = append(parts, fmt.Sprintf("required %v became %v", sa.Required, sb.Required))
	}
	if len(parts) == 0 {
		return "changed"
	}
	return strings.Join(parts, ", ")
}

// diffPins compares a grant's pinned tools with the tools listed now.
func diffPins(grant string, pinned []PinnedTool, listed []tools.ToolDef) []ToolChange {
	var out []ToolChange
	now := map[string]PinnedTool{}
	for _, d := range listed {
		now[d.Name] = pinOf(d)
	}
	for _, p := range pinned {
		n, ok := now[p.Name]
		if !ok {
			out = append(out, ToolChange{Grant: grant, Tool: p.Name, Change: ToolRemoved})
		} else if c := compareTool(grant, p, n); c != nil {
			out = append(out, *c)
		}
	}
	for _, d := range listed {
		if !slices.ContainsFunc(pinned, func(p PinnedTool) bool { return p.Name == d.Name }) {
			out = append(out, ToolChange{Grant: grant, Tool: d.Name, Change: ToolAdded})
		}
	}
	return out
}

// versionPins is a version's pinned (or, on a draft, fetched) tools by URL.
func (r *Runtime) versionPins(ctx context.Context, versionID string) (map[string][]PinnedTool, error) {
	lists, err := r.pinnedLists(ctx, versionID)
	out := make(map[string][]PinnedTool, len(lists))
	for url, l := range lists {
		out[url] = l.Tools
	}
	return out, err
}

// pinTool applies a published version's pins to one MCP tool a session
// lists: a pinned tool is offered as pinned, marked changed when the server
// now describes it otherwise; a tool the server added is governed by the
// grant's new_tools. Drafts and versions without pins are left as listed.
func pinTool(o *offered, pins map[string][]PinnedTool, g tools.MCPServer, version int) {
	pinned, ok := pins[g.URL]
	if !ok || o.Tool.Tool == "" {
		return
	}
	live := pinOf(tools.ToolDef{Name: o.Tool.Tool, Title: o.Title, Description: o.Description, InputSchema: o.InputSchema,
		Annotations: o.Annotations, OutputSchema: o.OutputSchema})
	i := slices.IndexFunc(pinned, func(p PinnedTool) bool { return p.Name == o.Tool.Tool })
	if i < 0 {
		switch g.NewTools {
		case tools.NewToolsAllow:
		case tools.NewToolsAsk:
			if o.Policy == tools.PolicyAllow {
				o.Policy, o.PolicySource = tools.PolicyAsk, "new_tools"
			}
		default:
			o.Policy, o.PolicySource, o.Offered = tools.PolicyDeny, "new_tools", false
		}
		return
	}
	p := pinned[i]
	if c := compareTool(g.Name, p, live); c != nil {
		o.pinChanged = fmt.Sprintf("tool %s changed on its MCP server since version %d pinned it (%s), so it is refused: "+
			"an operator reviews the change on the version's page and publishes a version with the new definition",
			o.Name, version, strings.Join(c.Details, "; "))
	}
	o.Title, o.Description, o.InputSchema, o.Annotations, o.OutputSchema = p.Title, p.Description, p.InputSchema, p.Annotations, p.OutputSchema
}

// refuseChanged records a call of a tool the server changed since the
// version pinned it: refused, with what changed, in one transaction with
// its Action.
func (r *Runtime) refuseChanged(ctx context.Context, p Principal, s models.Session, in ToolCallInput, t offered, a *act) (models.ToolCall, error) {
	input := "{}"
	if len(in.Input) > 0 && len(in.Input) <= maxInputBytes && json.Valid(in.Input) {
		input = string(in.Input)
	}
	now := r.now()
	call := models.ToolCall{ID: newID("call"), SessionID: s.ID, VersionID: s.VersionID, Tool: t.Name, Kind: t.Kind,
		GrantName: t.Grant, ToolName: t.Tool.Tool, Input: input, Model: truncate(in.Model, 200),
		ByKind: string(p.Kind), ByID: p.ID, ByLabel: p.Label, ClientInfo: truncate(in.ClientInfo, 200), CreatedAt: now,
		Status: CallRefused, Verdict: tools.PolicyDeny, PolicySource: CodeToolChanged, Reason: truncate(CodeToolChanged+": "+t.pinChanged, 1000), FinishedAt: &now}
	a.target(call.ID)
	rec := r.actionRecord(p, "ToolCall.create", a, VerdictRefused, call.Reason)
	call.Program = rec.ParentID
	err := r.hotWriteTx(func() error {
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&call).Error; err != nil {
				return err
			}
			return tx.Create(&rec).Error
		})
	})
	if err != nil {
		return call, fmt.Errorf("runtime: record call: %w", err)
	}
	a.recorded = true
	r.publish(Event{Kind: "call", ID: call.ID, SessionID: s.ID, State: call.Status})
	return call, nil
}

// changedRefusal is the error a caller gets for a call refused as tool_changed.
func changedRefusal(v ToolCallView) error {
	if v.Status != CallRefused || v.PolicySource != CodeToolChanged {
		return nil
	}
	return &Error{Kind: KindConflict, Code: CodeToolChanged, Title: "Tool changed", Field: "tool",
		Detail: fmt.Sprintf("%s (call %s)", v.Reason, v.ID)}
}

// versionCatalog is the catalog for checking one version's config: it also
// knows the MCP tools fetched for that version (tools.MCPToolLister).
type versionCatalog struct {
	catalog
	pins map[string][]PinnedTool
}

func (c versionCatalog) MCPTools(url string) ([]tools.ToolDef, bool) {
	ps, ok := c.pins[url]
	out := make([]tools.ToolDef, len(ps))
	for i, p := range ps {
		out[i] = tools.ToolDef{Name: p.Name, Title: p.Title, Description: p.Description, InputSchema: p.InputSchema,
			Annotations: p.Annotations, OutputSchema: p.OutputSchema}
	}
	return out, ok
}

// canonicalIn is canonical for the config of version id, whose tool rules
// on MCP grants are checked against the tools fetched for it.
func (r *Runtime) canonicalIn(ctx context.Context, raw []byte, id string) (string, error) {
	pins, err := r.versionPins(ctx, id)
	if err != nil {
		return "", err
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	out, err := tools.Canonical(raw, versionCatalog{catalog: catalog{ctx: ctx, r: r}, pins: pins})
	if err != nil {
		return "", configError(err)
	}
	return string(out), nil
}

// copyPins gives a new draft the tools of the version it starts from.
func copyPins(tx *gorm.DB, from, to string) error {
	var rows []models.VersionToolPins
	if err := tx.Where("version_id = ?", from).Find(&rows).Error; err != nil {
		return err
	}
	for _, row := range rows {
		row.VersionID = to
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
	}
	return nil
}

// prunePins drops what was fetched for URLs the config no longer grants,
// so a published version pins only its own servers' tools.
func prunePins(tx *gorm.DB, id string, cfg tools.Config) error {
	urls := []string{""}
	for _, g := range cfg.MCPServers {
		urls = append(urls, g.URL)
	}
	return tx.Where("version_id = ? AND url NOT IN ?", id, urls).Delete(&models.VersionToolPins{}).Error
}

// keepPins stores tools as version id's list for url.
func keepPins(tx *gorm.DB, id, url string, ts []PinnedTool, at time.Time) error {
	b, err := json.Marshal(ts)
	if err != nil {
		return err
	}
	if err := tx.Where("version_id = ? AND url = ?", id, url).Delete(&models.VersionToolPins{}).Error; err != nil {
		return err
	}
	return tx.Create(&models.VersionToolPins{VersionID: id, URL: url, Tools: string(b), FetchedAt: at}).Error
}

// asPinned is a version's tool as its sessions offer it: the pinned
// definition, new tools per new_tools, and a changed tool's policy source
// tool_changed (its calls are refused).
func asPinned(t tools.Tool, cfg tools.Config, pins map[string][]PinnedTool, version int) tools.Tool {
	if t.Kind != tools.KindMCP || len(pins) == 0 {
		return t
	}
	o := offered{Tool: t}
	pinTool(&o, pins, findGrant(cfg.MCPServers, t.Grant, func(g tools.MCPServer) string { return g.Name }), version)
	if o.pinChanged != "" {
		o.PolicySource = CodeToolChanged
	}
	return o.Tool
}
