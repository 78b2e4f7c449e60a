package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/subako/subako/runtime/tools"
)

// CheckGrantName answers the editor's live check of a grant name as a person
// types: each broken rule with its own message. It changes nothing, so it is
// not recorded; it still needs the permission to edit the version.
func (r *Runtime) CheckGrantName(ctx context.Context, p Principal, version, kind, name, current string) ([]FieldError, error) {
	if !p.Can("Version.update") {
		return nil, denied(p, "Version.update", "")
	}
	v, err := r.loadVersion(ctx, version)
	if err != nil {
		return nil, err
	}
	var others []string
	for _, n := range grantNames(versionView(v).Parsed(), kind) {
		if n != current {
			others = append(others, n)
		}
	}
	var out []FieldError
	for _, fe := range tools.CheckName(kind, name, others) {
		out = append(out, FieldError{Field: fe.Field, Code: fe.Code, Detail: fe.Detail})
	}
	return out, nil
}

func grantNames(cfg tools.Config, kind string) []string {
	var out []string
	switch kind {
	case tools.KindMCP:
		for _, g := range cfg.MCPServers {
			out = append(out, g.Name)
		}
	case tools.KindSkill:
		for _, g := range cfg.Skills {
			out = append(out, g.Name)
		}
	case tools.KindSandbox:
		for _, g := range cfg.Sandboxes {
			out = append(out, g.Name)
		}
	case tools.KindFn:
		for _, g := range cfg.Functions {
			out = append(out, g.Name)
		}
	case tools.KindBuiltin:
		for _, g := range cfg.Builtins {
			out = append(out, g.Name)
		}
	}
	return out
}

// VersionSetGrant replaces the grant named current (or adds one when current
// is "") in a draft, through Version.update, so the whole config is checked
// and the change recorded like any other. grant is the grant's JSON object as
// the agent config writes it.
func (r *Runtime) VersionSetGrant(ctx context.Context, p Principal, version, kind, current string, grant json.RawMessage) (VersionView, error) {
	return r.editConfig(ctx, p, version, func(cfg map[string][]json.RawMessage) error {
		key := configKey(kind)
		list := cfg[key]
		for i, g := range list {
			if grantName(g) == current && current != "" {
				list[i] = grant
				return nil
			}
		}
		if current != "" {
			// Someone removed or renamed it since the form was opened: adding it
			// back would undo their change.
			return conflict("grant_gone", fmt.Sprintf("%s is no longer in this version: someone changed it meanwhile; reload and try again", current))
		}
		cfg[key] = append(list, grant)
		return nil
	})
}

// VersionRemoveGrant removes one grant from a draft, through Version.update.
func (r *Runtime) VersionRemoveGrant(ctx context.Context, p Principal, version, kind, name string) (VersionView, error) {
	return r.editConfig(ctx, p, version, func(cfg map[string][]json.RawMessage) error {
		key := configKey(kind)
		var kept []json.RawMessage
		for _, g := range cfg[key] {
			if grantName(g) != name {
				kept = append(kept, g)
			}
		}
		cfg[key] = kept
		return nil
	})
}

func (r *Runtime) editConfig(ctx context.Context, p Principal, version string, edit func(map[string][]json.RawMessage) error) (VersionView, error) {
	return r.updateConfig(ctx, p, version, func(current string) ([]byte, error) {
		// The config holds settings beside the lists of grants (tools_as):
		// they pass through as they are.
		whole := map[string]json.RawMessage{}
		_ = json.Unmarshal([]byte(current), &whole)
		cfg := map[string][]json.RawMessage{}
		for k, raw := range whole {
			var list []json.RawMessage
			if json.Unmarshal(raw, &list) == nil {
				cfg[k] = list
			}
		}
		if err := edit(cfg); err != nil {
			return nil, err
		}
		for k, list := range cfg {
			if len(list) == 0 {
				delete(whole, k)
				continue
			}
			b, err := json.Marshal(list)
			if err != nil {
				return nil, err
			}
			whole[k] = b
		}
		return json.Marshal(whole)
	})
}

func configKey(kind string) string {
	switch kind {
	case tools.KindMCP:
		return "mcp_servers"
	case tools.KindSkill:
		return "skills"
	case tools.KindSandbox:
		return "sandboxes"
	case tools.KindFn:
		return "functions"
	case tools.KindBuiltin:
		return "builtins"
	}
	return kind
}

func grantName(raw json.RawMessage) string {
	var g struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &g)
	return g.Name
}
