package tools

import (
	"fmt"
	"slices"
)

// SandboxTool is the one tool every sandbox grant offers.
const SandboxTool = "exec"

func (v *validator) sandbox(path string, n *node, names *[]string) Sandbox {
	o, ok := v.object(path, n, "a sandbox grant",
		"name", "environment", "network", "default_policy", "tool_rules", "volume",
		"resources", "idle_timeout_secs")
	if !ok {
		return Sandbox{}
	}
	g := Sandbox{Name: v.name(o, KindSandbox, names)}
	g.Environment = v.environment(o)
	g.Network = v.network(o)
	g.DefaultPolicy = v.defaultPolicy(o)
	g.Volume = v.volumeSetting(o, "what the sandbox may do in the session's volume, mounted at /volume")
	g.Resources, g.IdleTimeoutSecs = v.resources(o), v.idleTimeout(o)
	g.ToolRules = v.toolRules(o, func(tool string) string {
		if tool == SandboxTool {
			return ""
		}
		return fmt.Sprintf("a sandbox has one tool, exec; found %s", quoteShort(tool))
	})
	return g
}

func (v *validator) environment(o obj) Environment {
	releases := v.cat.Releases()
	n, present := o.fs["environment"]
	if !present {
		example := "2026"
		if len(releases) > 0 {
			example = releases[0]
		}
		v.add(o.off("environment"), fieldError(o.at("environment"), "environment_required", fmt.Sprintf(
			`environment is required, such as {"type": "platform", "release": %q}`, example)))
		return Environment{}
	}
	e, ok := v.object(o.at("environment"), n, "an environment", "type", "release")
	if !ok {
		return Environment{}
	}
	env := Environment{Type: v.str(e, "type"), Release: v.str(e, "release")}
	if t := e.fs["type"]; t == nil || (t.kind == stringNode && env.Type != "platform") {
		detail := "environment type is required: platform"
		if t != nil {
			detail = fmt.Sprintf("environment type must be platform; found %s", quoteShort(env.Type))
		}
		v.add(e.off("type"), fieldError(e.at("type"), "invalid_environment", detail))
	}
	if r := e.fs["release"]; r == nil || (r.kind == stringNode && !slices.Contains(releases, env.Release)) {
		v.add(e.off("release"), fieldError(e.at("release"), "unknown_release", releaseDetail(r, env.Release, releases)))
	}
	return env
}

func releaseDetail(r *node, release string, offered []string) string {
	choose := "choose one of " + listWords(offered, "or")
	if len(offered) == 0 {
		choose = "no release is offered on this installation"
	}
	if r == nil || release == "" {
		return "release is required; " + choose
	}
	return fmt.Sprintf("release %s is not offered; %s", quoteShort(release), choose)
}

func (v *validator) network(o obj) Network {
	return v.networkSetting(o) // sandbox_network.go
}
