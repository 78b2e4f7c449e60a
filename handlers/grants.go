package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/views/pages"
)

// kindInfo is how the editor names each kind of grant.
type kindInfo struct {
	Kind, Title, Singular, Lead string
	HasPolicy                   bool
}

var kinds = []kindInfo{
	{tools.KindMCP, "MCP servers", "MCP server", "Remote MCP servers; the session's vault credential for the URL is attached to every call.", true},
	{tools.KindSkill, "Skills", "skill", "Files from the skills library the agent can read (skill__<name>__read).", false},
	{tools.KindSandbox, "Sandboxes", "sandbox", "A Linux machine of the session's own, reached through exec. Prefer a function where one fits.", true},
	{tools.KindFn, "Functions", "function", "WebAssembly packages, a fresh sandbox per call, with no network but the origins listed.", true},
	{tools.KindBuiltin, "Built-ins", "built-in", "Subako's own tools: ask_user (a question the user answers) and session (names the session).", false},
}

func kindOf(k string) (kindInfo, bool) {
	for _, ki := range kinds {
		if ki.Kind == k {
			return ki, true
		}
	}
	return kindInfo{}, false
}

func grantSections(cfg tools.Config) []pages.GrantSection {
	var out []pages.GrantSection
	for _, ki := range kinds {
		sec := pages.GrantSection{Kind: ki.Kind, Title: ki.Title, Singular: ki.Singular, Add: "Add " + ki.Singular, Lead: ki.Lead, HasPolicy: ki.HasPolicy}
		switch ki.Kind {
		case tools.KindMCP:
			for _, g := range cfg.MCPServers {
				sec.Grants = append(sec.Grants, pages.GrantRow{Name: g.Name, Details: []string{g.URL}, Policy: g.DefaultPolicy, Rules: ruleLines(g.ToolRules)})
			}
		case tools.KindSkill:
			for _, g := range cfg.Skills {
				sec.Grants = append(sec.Grants, pages.GrantRow{Name: g.Name, Details: []string{"skill " + g.Skill}})
			}
		case tools.KindSandbox:
			for _, g := range cfg.Sandboxes {
				net := "Internet"
				if g.Network.Type == tools.NetworkNone {
					net = "No internet"
				} else if g.Network.Type == tools.NetworkAllowlist {
					net = "Allowlist: " + strings.Join(g.Network.Allow, ", ")
				}
				details := []string{"Platform " + g.Environment.Release, net}
				if g.Volume != "" {
					details = append(details, "volume: "+g.Volume)
				}
				sec.Grants = append(sec.Grants, pages.GrantRow{Name: g.Name, Details: details,
					Policy: g.DefaultPolicy, Rules: ruleLines(g.ToolRules)})
			}
		case tools.KindFn:
			for _, g := range cfg.Functions {
				details := []string{g.Package + " " + g.Version, strings.Join(g.Origins, ", ")}
				if g.Volume != "" {
					details = append(details, "volume: "+g.Volume)
				}
				sec.Grants = append(sec.Grants, pages.GrantRow{Name: g.Name, Details: details,
					Policy: g.DefaultPolicy, Rules: ruleLines(g.ToolRules)})
			}
		case tools.KindBuiltin:
			for _, g := range cfg.Builtins {
				sec.Grants = append(sec.Grants, pages.GrantRow{Name: g.Name})
			}
		}
		out = append(out, sec)
	}
	return out
}

func ruleLines(rules map[string]tools.ToolRule) []string {
	var out []string
	for t, r := range rules {
		out = append(out, ruleLine(t, r)...)
	}
	sort.Strings(out)
	return out
}

// grantForm fills the form for a kind, from the grant named current when editing.
func (h *Handlers) grantForm(c echo.Context, kind, current string) (pages.GrantForm, error) {
	ki, ok := kindOf(kind)
	if !ok {
		return pages.GrantForm{}, echo.NewHTTPError(http.StatusNotFound, "no grant kind "+kind)
	}
	p := principal(c)
	v, err := h.RT.VersionGet(ctx(c), p, c.Param("version"))
	if err != nil {
		return pages.GrantForm{}, err
	}
	a, err := h.RT.AgentGet(ctx(c), p, v.Agent)
	if err != nil {
		return pages.GrantForm{}, err
	}
	f := pages.GrantForm{VersionID: v.ID, AgentName: a.Name, Number: v.Number, Kind: kind, HasPolicy: ki.HasPolicy,
		Title: "Add " + ki.Singular, Current: current, Policy: "allow", Network: tools.NetworkUnrestricted,
		Releases: h.RT.Releases(), ReleaseInfo: h.RT.ReleaseInfos(), Release: "2026", Errors: map[string]string{}, Published: v.State == runtime.StatePublished}
	if current != "" {
		f.Title = "Edit " + ki.Singular + " " + current
		if !fillFromConfig(&f, v.Parsed()) {
			return f, echo.NewHTTPError(http.StatusNotFound, "no "+ki.Singular+" named "+current+" in this version")
		}
	}
	h.fillChoices(c, &f)
	return f, nil
}

func fillFromConfig(f *pages.GrantForm, cfg tools.Config) bool {
	rules := func(m map[string]tools.ToolRule) {
		for t, r := range m {
			f.Rules = append(f.Rules, ruleRow(t, r))
		}
		sort.Slice(f.Rules, func(i, j int) bool { return f.Rules[i].Tool < f.Rules[j].Tool })
	}
	switch f.Kind {
	case tools.KindMCP:
		if i := slices.IndexFunc(cfg.MCPServers, func(g tools.MCPServer) bool { return g.Name == f.Current }); i >= 0 {
			g := cfg.MCPServers[i]
			f.Name, f.URL, f.Policy, f.NewTools = g.Name, g.URL, g.DefaultPolicy, g.NewTools
			rules(g.ToolRules)
			return true
		}
	case tools.KindSkill:
		if i := slices.IndexFunc(cfg.Skills, func(g tools.Skill) bool { return g.Name == f.Current }); i >= 0 {
			f.Name, f.Skill = cfg.Skills[i].Name, cfg.Skills[i].Skill
			return true
		}
	case tools.KindSandbox:
		if i := slices.IndexFunc(cfg.Sandboxes, func(g tools.Sandbox) bool { return g.Name == f.Current }); i >= 0 {
			g := cfg.Sandboxes[i]
			loadResources(f, g) // grant_resources.go
			f.Name, f.Release, f.Network, f.Policy = g.Name, g.Environment.Release, g.Network.Type, g.DefaultPolicy
			f.Volume = g.Volume
			f.Allow = strings.Join(g.Network.Allow, "\n")
			rules(g.ToolRules)
			return true
		}
	case tools.KindFn:
		if i := slices.IndexFunc(cfg.Functions, func(g tools.Function) bool { return g.Name == f.Current }); i >= 0 {
			g := cfg.Functions[i]
			f.Name, f.Package, f.Origins, f.Policy = g.Name, g.Package+"@"+g.Version, strings.Join(g.Origins, "\n"), g.DefaultPolicy
			f.Volume = g.Volume
			rules(g.ToolRules)
			return true
		}
	case tools.KindBuiltin:
		if slices.ContainsFunc(cfg.Builtins, func(g tools.Builtin) bool { return g.Name == f.Current }) {
			f.Name = f.Current
			return true
		}
	}
	return false
}

// builtinLabels say what each built-in does, in the picker.
var builtinLabels = map[string]string{tools.BuiltinAskUser: "ask_user — ask the user a question", tools.BuiltinSession: "session — name the session"}

// fillChoices adds the selects' options and blank rule rows.
func (h *Handlers) fillChoices(c echo.Context, f *pages.GrantForm) {
	p := principal(c)
	h.fillCeilings(f)
	if ch, err := h.RT.GrantChoices(ctx(c), p, f.VersionID, f.Kind, f.Current); err == nil {
		f.KnownTools = ch.Tools
		f.Builtins = nil
		for _, b := range ch.Builtins {
			f.Builtins = append(f.Builtins, pages.Option{Value: b, Label: builtinLabels[b]})
		}
	}
	switch f.Kind {
	case tools.KindSkill:
		f.Skills = h.skillOptions(c)
	case tools.KindFn:
		if fns, err := h.RT.FunctionList(ctx(c), p); err == nil {
			for _, fn := range fns {
				f.Packages = append(f.Packages, pages.Option{Value: fn.Name + "@" + fn.Version, Label: fn.Name + " " + fn.Version})
			}
		}
	}
	if f.Kind == tools.KindMCP {
		h.fillFetched(c, f)
	}
	for len(f.Rules) < 3 || f.Rules[len(f.Rules)-1].Tool != "" {
		f.Rules = append(f.Rules, pages.RuleRow{Policy: "ask"})
	}
}

// NewGrant shows the form to add a grant.
func (h *Handlers) NewGrant(c echo.Context) error {
	f, err := h.grantForm(c, c.Param("kind"), "")
	if err != nil {
		return err
	}
	if f.Published {
		return h.publishedForm(c, f)
	}
	return render(c, http.StatusOK, pages.GrantFormPage(h.shell(c, f.Title, "agents"), f))
}

// publishedForm answers a grant form asked of a published version: there is
// nothing to fill in, so the editor (read-only) says why.
func (h *Handlers) publishedForm(c echo.Context, f pages.GrantForm) error {
	h.flash(c, "error", fmt.Sprintf("Version %d is published and cannot change: start a new draft from it to edit its grants.", f.Number))
	return redirect(c, "/versions/"+f.VersionID)
}

// EditGrant shows the form to edit a grant.
func (h *Handlers) EditGrant(c echo.Context) error {
	f, err := h.grantForm(c, c.Param("kind"), c.Param("name"))
	if err != nil {
		return err
	}
	if f.Published {
		return h.publishedForm(c, f)
	}
	return render(c, http.StatusOK, pages.GrantFormPage(h.shell(c, f.Title, "agents"), f))
}

// SaveGrant adds or replaces a grant through Version.update; a problem is
// shown under the field it concerns.
func (h *Handlers) SaveGrant(c echo.Context) error {
	kind, current := c.Param("kind"), c.Param("name")
	f, err := h.grantForm(c, kind, "")
	if err != nil {
		return err
	}
	f.Current = current
	if current != "" {
		f.Title = strings.Replace(f.Title, "Add", "Edit", 1) + " " + current
	}
	readForm(c, &f)
	if msg := badRuleJSON(f); msg != "" {
		f.Errors["tool_rules"] = msg
		h.fillChoices(c, &f)
		return render(c, http.StatusUnprocessableEntity, pages.GrantFormPage(h.shell(c, f.Title, "agents"), f))
	}
	_, err = h.RT.VersionSetGrant(ctx(c), principal(c), f.VersionID, kind, current, grantJSON(f))
	if err == nil {
		h.flash(c, "ok", "Saved "+f.Name+".")
		return redirect(c, "/versions/"+f.VersionID+"#section-"+kind)
	}
	e, ok := runtime.AsError(err)
	if !ok || e.Kind != runtime.KindInvalid {
		return h.flashError(c, err, "/versions/"+f.VersionID)
	}
	for _, fe := range e.Fields {
		field := formField(fe.Field)
		if _, taken := f.Errors[field]; !taken && field != "" {
			f.Errors[field] = fe.Detail
		} else if field == "" {
			f.Error = fe.Field + ": " + fe.Detail
		}
	}
	h.fillChoices(c, &f)
	return render(c, http.StatusUnprocessableEntity, pages.GrantFormPage(h.shell(c, f.Title, "agents"), f))
}

func readForm(c echo.Context, f *pages.GrantForm) {
	f.Name = strings.TrimSpace(c.FormValue("name"))
	f.URL = strings.TrimSpace(c.FormValue("url"))
	f.Skill = c.FormValue("skill")
	f.Release = c.FormValue("release")
	f.Network = c.FormValue("network")
	f.Allow = c.FormValue("allow")
	f.Policy = c.FormValue("default_policy")
	f.Package = c.FormValue("package")
	f.Origins = c.FormValue("origins")
	f.NewTools = c.FormValue("new_tools")
	f.Volume = c.FormValue("volume")
	readResources(c, f)
	form, _ := c.FormParams()
	toolsIn, policies, whens := form["rule_tool"], form["rule_policy"], form["rule_when"]
	f.Rules = nil
	for i, t := range toolsIn {
		if t = strings.TrimSpace(t); t != "" && i < len(policies) {
			row := pages.RuleRow{Tool: t, Policy: policies[i]}
			if i < len(whens) {
				row.When = strings.TrimSpace(whens[i])
			}
			f.Rules = append(f.Rules, row)
		}
	}
}

// grantJSON writes the form as the grant's agent-config object.
func grantJSON(f pages.GrantForm) json.RawMessage {
	// The rules keep their rows: a tool given twice reaches the config's
	// parser as a duplicate key and is refused there, as in the API, rather
	// than the last row silently winning.
	var rules strings.Builder
	rules.WriteByte('{')
	for i, r := range f.Rules {
		if i > 0 {
			rules.WriteByte(',')
		}
		k, _ := json.Marshal(r.Tool)
		v := ruleValue(r)
		rules.Write(k)
		rules.WriteByte(':')
		rules.Write(v)
	}
	rules.WriteByte('}')
	ruleJSON := json.RawMessage(rules.String())
	var g map[string]any
	switch f.Kind {
	case tools.KindMCP:
		g = map[string]any{"name": f.Name, "url": f.URL, "default_policy": f.Policy, "tool_rules": ruleJSON}
		if f.NewTools != "" && f.NewTools != tools.NewToolsDeny {
			g["new_tools"] = f.NewTools // deny, the default, is left unsaid
		}
	case tools.KindSkill:
		g = map[string]any{"name": f.Name, "skill": f.Skill}
	case tools.KindSandbox:
		g = map[string]any{"name": f.Name, "environment": map[string]string{"type": "platform", "release": f.Release},
			"network": networkJSON(f), "default_policy": f.Policy, "tool_rules": ruleJSON}
		if f.Volume != "" && f.Volume != tools.VolumeNone {
			g["volume"] = f.Volume // none, the default, is left unsaid
		}
		addResources(g, f)
	case tools.KindFn:
		pkg, ver, _ := strings.Cut(f.Package, "@")
		origins := []string{}
		for _, o := range strings.Fields(f.Origins) {
			origins = append(origins, o)
		}
		g = map[string]any{"name": f.Name, "package": pkg, "version": ver, "origins": origins, "default_policy": f.Policy, "tool_rules": ruleJSON}
		if f.Volume != "" && f.Volume != tools.VolumeNone {
			g["volume"] = f.Volume // none, the default, is left unsaid
		}
	default:
		g = map[string]any{"name": f.Name}
	}
	b, _ := json.Marshal(g)
	return b
}

var grantPrefix = regexp.MustCompile(`^[a-z_]+\[\d+\]\.?`)

// formField maps a config path (sandboxes[0].environment.release) to the form field it concerns.
func formField(path string) string {
	rest := grantPrefix.ReplaceAllString(path, "")
	switch {
	case rest == "environment.release" || rest == "environment" || strings.HasPrefix(rest, "environment."):
		return "release"
	case strings.HasPrefix(rest, "network"):
		return "network"
	case strings.HasPrefix(rest, "tool_rules"):
		return "tool_rules"
	case strings.HasPrefix(rest, "origins"):
		return "origins"
	case rest == "volume":
		return "volume"
	case rest == "version":
		return "package"
	}
	return rest
}

// CheckGrantName answers the live name check with the message for the field.
func (h *Handlers) CheckGrantName(c echo.Context) error {
	errs, err := h.RT.CheckGrantName(ctx(c), principal(c), c.Param("version"), c.Param("kind"), strings.TrimSpace(c.FormValue("name")), c.FormValue("current"))
	if err != nil {
		return err
	}
	msg := ""
	if len(errs) > 0 {
		msg = errs[0].Detail
	}
	return render(c, http.StatusOK, pages.NameError(msg))
}

// RemoveGrant removes a grant from a draft.
func (h *Handlers) RemoveGrant(c echo.Context) error {
	id := c.Param("version")
	if _, err := h.RT.VersionRemoveGrant(ctx(c), principal(c), id, c.Param("kind"), c.Param("name")); err != nil {
		return h.flashError(c, err, "/versions/"+id)
	}
	h.flash(c, "ok", fmt.Sprintf("Removed %s.", c.Param("name")))
	return redirect(c, "/versions/"+id)
}

func (h *Handlers) skillOptions(c echo.Context) []pages.Option {
	var out []pages.Option
	if skills, err := h.RT.SkillList(ctx(c), principal(c)); err == nil {
		for _, s := range skills {
			out = append(out, pages.Option{Value: s.Name, Label: s.Name})
		}
	}
	return out
}
