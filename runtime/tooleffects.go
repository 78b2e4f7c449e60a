package runtime

import (
	"context"
	"maps"
	"slices"

	"github.com/subako/subako/runtime/tools"
)

// Tool effects, beside the policies allow, ask and deny.
const (
	EffectNotGranted = "not_granted" // the version does not have the tool
	EffectNoPolicy   = "no_policy"   // offered with no policy (built-ins)
)

// ToolEffect is what a change between two versions does to one tool: its
// effective policy before and after (Version.tools' view, rules and
// defaults applied), so "get-env: Deny → Allow" reads without working out
// which rule wins.
type ToolEffect struct {
	Name   string `json:"name"` // full name, as the model sees it
	Kind   string `json:"kind"`
	Grant  string `json:"grant"`
	Tool   string `json:"tool"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// VersionToolEffects lists the tools whose effective policy differs from
// version against to version id, by full name. MCP servers' tools count once
// a session has discovered them; before that they are not known one by one.
// It is part of the Compare page, which Version.diff records.
func (r *Runtime) VersionToolEffects(ctx context.Context, p Principal, id, against string) ([]ToolEffect, error) {
	if !p.Can("Version.diff") {
		return nil, denied(p, "Version.diff", "")
	}
	v, err := r.loadVersion(ctx, id)
	if err != nil {
		return nil, err
	}
	w, err := r.loadVersion(ctx, against)
	if err != nil {
		return nil, err
	}
	catalog := r.catalog(ctx)
	effects := func(cfg tools.Config) map[string]tools.Tool {
		out := map[string]tools.Tool{}
		for _, t := range tools.List(cfg, r.discoveredTools(ctx, cfg), catalog) {
			if t.Name != "" {
				out[t.Name] = t
			}
		}
		return out
	}
	before, after := effects(versionView(w).Parsed()), effects(versionView(v).Parsed())
	names := slices.Sorted(maps.Keys(before))
	for n := range after {
		if _, ok := before[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := []ToolEffect{}
	for _, n := range names {
		b, inB := before[n]
		a, inA := after[n]
		e := ToolEffect{Name: n, Before: effectOf(b, inB), After: effectOf(a, inA)}
		if e.Before == e.After {
			continue
		}
		t := a
		if !inA {
			t = b
		}
		e.Kind, e.Grant, e.Tool = t.Kind, t.Grant, t.Tool
		out = append(out, e)
	}
	return out, nil
}

func effectOf(t tools.Tool, granted bool) string {
	switch {
	case !granted:
		return EffectNotGranted
	case !t.Offered:
		return "deny"
	case t.Policy == "":
		return EffectNoPolicy
	}
	return t.Policy
}
