package runtime

import (
	"context"
	"slices"

	"github.com/subako/subako/runtime/tools"
)

// GrantChoices is what a grant form may offer for one grant of a version.
type GrantChoices struct {
	// Builtins are the built-ins the version does not grant yet (the one
	// being edited stays), so the picker offers nothing that would clash.
	Builtins []string
	// Tools are the grant's known tool names for its rules: a sandbox's exec,
	// a function package's tools, an MCP server's tools once a session has
	// discovered them. Empty when none are known; rules then take free text.
	Tools []string
}

// GrantChoices reads what the form for grant current (empty for a new one)
// of kind may offer. It is part of the form page, which Version.get covers,
// so it is not recorded itself.
func (r *Runtime) GrantChoices(ctx context.Context, p Principal, versionID, kind, current string) (GrantChoices, error) {
	var out GrantChoices
	if !p.Can("Version.get") {
		return out, denied(p, "Version.get", "")
	}
	v, err := r.loadVersion(ctx, versionID)
	if err != nil {
		return out, err
	}
	cfg := versionView(v).Parsed()
	if kind == tools.KindBuiltin {
		for _, b := range []string{tools.BuiltinAskUser, tools.BuiltinSession} {
			granted := slices.ContainsFunc(cfg.Builtins, func(g tools.Builtin) bool { return g.Name == b })
			if !granted || b == current {
				out.Builtins = append(out.Builtins, b)
			}
		}
	}
	if kind == tools.KindSandbox {
		out.Tools = []string{tools.SandboxTool}
		return out, nil
	}
	if current == "" {
		return out, nil
	}
	for _, t := range tools.List(cfg, r.discoveredTools(ctx, cfg), r.catalog(ctx)) {
		if t.Kind == kind && t.Grant == current && t.Tool != "" && !slices.Contains(out.Tools, t.Tool) {
			out.Tools = append(out.Tools, t.Tool)
		}
	}
	slices.Sort(out.Tools)
	return out, nil
}
