package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// offered is one tool of a session with what its executor needs to run it.
type offered struct {
	tools.Tool
	URL      string
	Skill    string
	Sandbox  tools.Sandbox
	Function tools.Function
	Client   string
	// discoveryFailed: the newest discovery of this MCP tool's server failed,
	// so a call it answers clears that failure (discoveryAnswered).
	discoveryFailed bool
	// pinChanged says how the server changed this pinned tool since the
	// version was published (toolpins.go); such a call is refused.
	pinChanged string
}

// OfferedTool is one tool a session offers, as Session.tools answers.
type OfferedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Policy      string          `json:"policy"`
	// An MCP server's tool: its title, annotations, output schema and _meta
	// as the server listed them; absent when it listed none.
	Title        string          `json:"title,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Meta         json.RawMessage `json:"meta,omitempty"`
	// Rules are the tool's argument rules: calls they match are decided by
	// them (deny beats ask beats allow), Policy decides the rest.
	Rules []tools.ArgRule `json:"rules,omitempty"`
}

// DiscoveryProblem is an MCP server whose tools this session could not list.
// Stale says its last good list is still offered (the server failed after
// answering once); otherwise its tools are missing from Session.tools until
// discovery succeeds.
type DiscoveryProblem struct {
	Grant string `json:"grant"`
	Error string `json:"error"`
	Stale bool   `json:"stale,omitempty"`
}

// SessionTools is Session.tools: what the agent may call here, denied tools absent.
// refresh re-discovers the MCP servers' tools.
func (r *Runtime) SessionTools(ctx context.Context, p Principal, id string, refresh bool) ([]OfferedTool, error) {
	rep, err := r.SessionToolsReport(ctx, p, id, refresh)
	return rep.Tools, err
}

// ToolsReport is Session.tools with what the session page shows beside
// the tools: the MCP servers whose discovery failed for this session, and
// the tools servers listed that are not offered, each with why.
type ToolsReport struct {
	Tools    []OfferedTool
	Problems []DiscoveryProblem
	Skipped  []SkippedTool
}

// SessionToolsReport is Session.tools with its ToolsReport.
func (r *Runtime) SessionToolsReport(ctx context.Context, p Principal, id string, refresh bool) (ToolsReport, error) {
	out := ToolsReport{Tools: []OfferedTool{}}
	err := r.run(ctx, p, "Session.tools", func(a *act) error {
		s, err := r.loadSession(ctx, p, id)
		if err != nil {
			return err
		}
		rep, err := r.sessionToolsReport(ctx, s, refresh)
		if err != nil {
			return err
		}
		for _, t := range rep.all {
			if t.Offered {
				out.Tools = append(out.Tools, OfferedTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Policy: t.Policy,
					Title: t.Title, Annotations: t.Annotations, OutputSchema: t.OutputSchema, Meta: t.Meta, Rules: t.Rules})
			}
		}
		for _, g := range slices.Sorted(maps.Keys(rep.failed)) {
			out.Problems = append(out.Problems, DiscoveryProblem{Grant: g, Error: rep.failed[g], Stale: rep.stale[g]})
		}
		out.Skipped = rep.skipped
		return nil
	}, id)
	return out, err
}

// sessionTools lists every tool of the session's version, offered or not, plus
// the tools its clients declared.
func (r *Runtime) sessionTools(ctx context.Context, s models.Session, refresh bool) ([]offered, error) {
	rep, err := r.sessionToolsReport(ctx, s, refresh)
	return rep.all, err
}

// toolsReport is every tool of a session, with by MCP grant why its
// discovery failed (its last good list, if any, is still offered), and the
// tools servers listed that are not offered.
type toolsReport struct {
	all     []offered
	failed  map[string]string
	stale   map[string]bool // failed, but offering the last good list
	skipped []SkippedTool
}

// sessionToolsReport answers from memory unless asked to refresh: the report
// is rebuilt after any write to what it is built from (hotpath.go). The
// report is shared by the calls that read it; none may change it.
func (r *Runtime) sessionToolsReport(ctx context.Context, s models.Session, refresh bool) (toolsReport, error) {
	now := r.now()
	if !refresh {
		if rep, ok := r.hot.tools.get(r.hot, s.ID, now); ok {
			return rep, nil
		}
	}
	gen := r.hot.gen.Load()
	rep, err := r.buildToolsReport(ctx, s, refresh)
	if err == nil {
		r.hot.tools.put(r.hot, s.ID, gen, now, rep)
	}
	return rep, err
}

func (r *Runtime) buildToolsReport(ctx context.Context, s models.Session, refresh bool) (toolsReport, error) {
	rep := toolsReport{failed: map[string]string{}, stale: map[string]bool{}}
	v, err := r.loadVersion(ctx, s.VersionID)
	if err != nil {
		return rep, err
	}
	cfg := versionView(v).Parsed()
	pins, err := r.publishedPins(ctx, v)
	if err != nil {
		return rep, err
	}
	discovered := map[string][]tools.ToolDef{}
	for _, g := range cfg.MCPServers {
		listed, ok, why := r.discover(ctx, s.ID, g.URL, refresh)
		if ok {
			var skipped []SkippedTool
			discovered[g.Name], skipped = offerable(g.Name, listed)
			rep.skipped = append(rep.skipped, skipped...)
		}
		if why != "" {
			rep.failed[g.Name], rep.stale[g.Name] = why, ok
		}
	}
	for _, t := range tools.List(cfg, discovered, r.catalog(ctx)) {
		o := offered{Tool: t}
		switch t.Kind {
		case tools.KindMCP:
			g := findGrant(cfg.MCPServers, t.Grant, func(g tools.MCPServer) string { return g.Name })
			o.URL = g.URL
			o.discoveryFailed = rep.failed[t.Grant] != ""
			pinTool(&o, pins, g, v.Number)
		case tools.KindSkill:
			o.Skill = findGrant(cfg.Skills, t.Grant, func(g tools.Skill) string { return g.Name }).Skill
		case tools.KindSandbox:
			o.Sandbox = findGrant(cfg.Sandboxes, t.Grant, func(g tools.Sandbox) string { return g.Name })
		case tools.KindFn:
			o.Function = findGrant(cfg.Functions, t.Grant, func(g tools.Function) string { return g.Name })
		}
		rep.all = append(rep.all, o)
	}
	clients, err := r.clientTools(ctx, s.ID)
	rep.all = append(rep.all, clients...)
	return rep, err
}

func findGrant[G any](gs []G, name string, nameOf func(G) string) G {
	for _, g := range gs {
		if nameOf(g) == name {
			return g
		}
	}
	var zero G
	return zero
}

// discover returns what an MCP server listed as this session's credential
// sees it: from the cache of that (URL, credential) unless refresh is asked
// or nothing is cached. A session never sees a list another credential
// discovered. failed is why the newest discovery failed, or "".
func (r *Runtime) discover(ctx context.Context, sessionID, url string, refresh bool) (listed []storedTool, ok bool, failed string) {
	credID, attach, err := r.attacherFor(ctx, sessionID, url)
	if err != nil {
		r.opts.Log.Error("runtime: credential for discovery", "session", sessionID, "err", err)
		return nil, false, "this session's credential for it could not be opened (see the server's log)"
	}
	var d models.MCPDiscovery
	cached := r.db.WithContext(ctx).First(&d, "url = ? AND credential_id = ?", url, credID).Error == nil
	var last []storedTool
	if cached {
		_ = json.Unmarshal([]byte(d.Tools), &last)
	}
	known := cached && (d.Error == "" || len(last) > 0)
	// The cache answers unless asked to refresh; after a failure it answers
	// with the last good list for a minute rather than ask a failing server on
	// every call and page view.
	if cached && !refresh && (d.Error == "" || r.now().Sub(d.DiscoveredAt) < discoveryRetryAfter) {
		return last, known, d.Error
	}
	found, err := r.mcp.Discover(ctx, url, mcpPoolKey(sessionID, credID), attach)
	err = hideCredentialIn(ctx, err, attach)
	d = models.MCPDiscovery{URL: url, CredentialID: credID, Tools: d.Tools, DiscoveredAt: r.now()}
	if err != nil {
		// The last good list stays: a server restarting for a moment keeps its tools.
		if d.Tools == "" {
			d.Tools = "[]"
		}
		d.Error = truncate(err.Error(), 1000)
		r.opts.Log.Warn("runtime: mcp discovery failed", "url", redactURL(url), "err", err)
		r.db.WithContext(ctx).Save(&d)
		return last, len(last) > 0, d.Error
	}
	listed = hideCredentialsInTools(storedTools(found), credentialValues(ctx, attach))
	b, _ := json.Marshal(listed)
	d.Tools = string(b)
	r.db.WithContext(ctx).Save(&d)
	return listed, true, ""
}

// discoveryRetryAfter is how long a failed discovery stands before the next try.
const discoveryRetryAfter = time.Minute

// discoveryAnswered clears a failed discovery of (url, credential) once the
// server has answered a call through it: the server is back, so the pages
// stop saying it failed. Its tools are the last good list until the next
// discovery, which a call's success is no reason to force.
func (r *Runtime) discoveryAnswered(ctx context.Context, url, credID string) {
	// A read by primary key first: the usual answer is "nothing failed", and
	// a call should not take the database's write lock for that.
	var d models.MCPDiscovery
	if r.db.WithContext(ctx).First(&d, "url = ? AND credential_id = ?", url, credID).Error != nil || d.Error == "" || d.Tools == "[]" {
		return
	}
	err := r.db.WithContext(ctx).Model(&models.MCPDiscovery{}).
		Where("url = ? AND credential_id = ? AND error <> ''", url, credID).Update("error", "").Error
	if err != nil {
		r.opts.Log.Warn("runtime: clear a failed discovery", "url", redactURL(url), "err", err)
	}
}

// mcpPoolKey scopes an upstream MCP session to one Subako session and its
// credential: servers that keep state per MCP session never mix customers.
func mcpPoolKey(sessionID, credID string) string { return sessionID + "/" + credID }

// redactURL keeps a URL's origin and path for logs, never its query.
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

// discoveryErrors returns, by MCP grant, the newest failed discovery of a URL
// that no session has discovered yet.
func (r *Runtime) discoveryErrors(ctx context.Context, cfg tools.Config) map[string]string {
	out := map[string]string{}
	for _, g := range cfg.MCPServers {
		var d models.MCPDiscovery
		if r.db.WithContext(ctx).Where("url = ? AND error <> ''", g.URL).Order("discovered_at DESC").First(&d).Error == nil {
			out[g.Name] = d.Error
		}
	}
	return out
}

// discoveredByURL returns, for the version editor, the latest list any
// session discovered at each URL: the operator's view of the version.
func (r *Runtime) discoveredByURL(ctx context.Context, urls []string) map[string][]storedTool {
	out := map[string][]storedTool{}
	var ds []models.MCPDiscovery
	r.db.WithContext(ctx).Where("url IN ? AND tools <> '[]'", urls).Order("discovered_at").Find(&ds)
	for _, d := range ds {
		var listed []storedTool
		if json.Unmarshal([]byte(d.Tools), &listed) == nil {
			out[d.URL] = listed
		}
	}
	return out
}

func (r *Runtime) clientTools(ctx context.Context, sessionID string) ([]offered, error) {
	var cs []models.Client
	if err := r.db.WithContext(ctx).Where("session_id = ?", sessionID).Order("name").Find(&cs).Error; err != nil {
		return nil, fmt.Errorf("runtime: clients: %w", err)
	}
	var out []offered
	for _, c := range cs {
		var defs []tools.ToolDef
		_ = json.Unmarshal([]byte(c.Tools), &defs)
		for _, d := range defs {
			out = append(out, offered{Client: c.Name, Tool: tools.Tool{Name: tools.FullName(tools.KindClient, c.Name, d.Name),
				Kind: tools.KindClient, Grant: c.Name, Tool: d.Name, Description: d.Description, InputSchema: d.InputSchema,
				Offered: true, Discovered: true}})
		}
	}
	return out, nil
}
