package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/subako/subako/models"
)

// The example agent's names: a second load finds them and creates nothing.
const (
	exampleAgent = "example"
	exampleSkill = "example-notes"
)

// ExampleView is what loading the example agent left: its agent, published
// version and session. Token is set only when this load started the session,
// for the page that shows it once.
type ExampleView struct {
	Agent, Version, Session, Token string
	Created                        bool
}

// CanLoadExample says whether p may load the example agent: owners and
// admins, who set an installation up.
func (p Principal) CanLoadExample() bool {
	return p.Kind == PrincipalUser && (p.Access == AccessOwner || p.Access == AccessAdmin)
}

// exampleSkillFiles is a skill small enough to read in one call: a note and
// a script the sandbox can run from /skills.
var exampleSkillFiles = []SkillFileInput{
	{Path: "SKILL.md", Content: "# Example notes\n\nRead this file with the skill's read tool; run bin/hello.sh in the sandbox.\n"},
	{Path: "bin/hello.sh", Content: "#!/bin/sh\necho hello from the example skill\n", Mode: 0o755},
}

// ExampleLoad gives an empty console something alive in one step: a skill,
// an agent whose published version grants it with a sandbox (release 2026,
// no internet, allow), the shipped jq (or javascript) function when
// installed, and ask_user, and a session bound to no vault. Each part is
// made by its own verb, recorded as p's. Loading again creates nothing: it
// answers the existing example, starting a session only if none is active.
func (r *Runtime) ExampleLoad(ctx context.Context, p Principal) (ExampleView, error) {
	if !p.CanLoadExample() {
		return ExampleView{}, denied(p, "Agent.create", "only owners and admins load the example agent")
	}
	out, found, err := r.existingExample(ctx, p)
	if err != nil || (found && out.Session != "") {
		return out, err
	}
	if !found {
		if out, err = r.createExample(ctx, p); err != nil {
			return out, err
		}
	}
	s, err := r.SessionCreate(ctx, p, SessionCreateInput{Version: out.Version, Title: "Example session"})
	if err != nil {
		return out, fmt.Errorf("example: start session: %w", err)
	}
	out.Session, out.Token = s.ID, s.Token
	return out, nil
}

// existingExample finds the example agent's latest published version and its
// newest active session, if the example was loaded before.
func (r *Runtime) existingExample(ctx context.Context, p Principal) (ExampleView, bool, error) {
	agents, err := r.AgentList(ctx, p)
	if err != nil {
		return ExampleView{}, false, fmt.Errorf("example: list agents: %w", err)
	}
	i := slices.IndexFunc(agents, func(a AgentView) bool { return a.Name == exampleAgent })
	if i < 0 {
		return ExampleView{}, false, nil
	}
	out := ExampleView{Agent: agents[i].ID}
	vs, err := r.VersionList(ctx, p, out.Agent)
	if err != nil {
		return out, true, fmt.Errorf("example: list versions: %w", err)
	}
	for _, v := range vs {
		if v.State == StatePublished && (out.Version == "" || v.Number > vnum(vs, out.Version)) {
			out.Version = v.ID
		}
	}
	if out.Version == "" {
		return out, true, conflict("example_changed", "an agent named example exists with no published version: publish one, or rename it to load the example")
	}
	ss, err := r.SessionList(ctx, p, SessionFilter{Agent: out.Agent, State: SessionActive})
	if err != nil {
		return out, true, fmt.Errorf("example: list sessions: %w", err)
	}
	for _, s := range ss {
		if s.Version == out.Version {
			out.Session = s.ID
			break
		}
	}
	return out, true, nil
}

func vnum(vs []VersionView, id string) int {
	for _, v := range vs {
		if v.ID == id {
			return v.Number
		}
	}
	return 0
}

// createExample makes the skill (unless one of its name exists), the agent
// and its published version.
func (r *Runtime) createExample(ctx context.Context, p Principal) (ExampleView, error) {
	if _, err := r.SkillGet(ctx, p, exampleSkill); err != nil {
		_, err := r.SkillCreate(ctx, p, SkillInput{Name: exampleSkill,
			Description: "A note and a script, made by Load the example agent", Files: exampleSkillFiles})
		if err != nil {
			return ExampleView{}, fmt.Errorf("example: create skill: %w", err)
		}
	}
	name, desc := exampleAgent, "Made by Load the example agent: a sandbox, a function, a skill and ask_user"
	a, err := r.AgentCreate(ctx, p, AgentInput{Name: &name, Description: &desc})
	if err != nil {
		return ExampleView{}, fmt.Errorf("example: create agent: %w", err)
	}
	v, err := r.publishExample(ctx, p, a.ID)
	if err != nil {
		// An agent left without a published version would make every later
		// load refuse (example_changed): take it away again.
		if derr := r.AgentDelete(context.WithoutCancel(ctx), p, a.ID); derr != nil {
			r.opts.Log.Error("example: remove the half-made agent", "agent", a.ID, "err", derr)
		}
		return ExampleView{}, err
	}
	return ExampleView{Agent: a.ID, Version: v, Created: true}, nil
}

// publishExample creates the example's version under agent and publishes it.
func (r *Runtime) publishExample(ctx context.Context, p Principal, agent string) (string, error) {
	cfg, err := r.exampleConfig(ctx, p)
	if err != nil {
		return "", err
	}
	v, err := r.VersionCreate(ctx, p, VersionCreateInput{Agent: agent, Config: cfg})
	if err != nil {
		return "", fmt.Errorf("example: create version: %w", err)
	}
	if _, err := r.VersionPublish(ctx, p, v.ID); err != nil {
		return "", fmt.Errorf("example: publish version: %w", err)
	}
	return v.ID, nil
}

// exampleConfig grants the skill, a sandbox, ask_user and, when the server
// installed it, the shipped jq (else javascript) function.
func (r *Runtime) exampleConfig(ctx context.Context, p Principal) (json.RawMessage, error) {
	cfg := map[string]any{
		"skills": []any{map[string]any{"name": "notes", "skill": exampleSkill}},
		"sandboxes": []any{map[string]any{"name": "workbench", "environment": map[string]any{"type": "platform", "release": "2026"},
			"network": map[string]any{"type": "none"}, "default_policy": "allow"}},
		"builtins": []any{map[string]any{"name": "ask_user"}},
	}
	fns, err := r.FunctionList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("example: list functions: %w", err)
	}
	for _, want := range []string{"jq", "javascript"} {
		if i := slices.IndexFunc(fns, func(f FunctionView) bool { return f.Name == want }); i >= 0 {
			cfg["functions"] = []any{map[string]any{"name": want, "package": want, "version": fns[i].Version, "default_policy": "allow"}}
			break
		}
	}
	return json.Marshal(cfg)
}

// NeedsSetup reports whether no one has an account yet, so the sign-in page
// can say where the owner's setup link is. It is not a verb: anyone may know
// that an installation is unclaimed, never the link itself.
func (r *Runtime) NeedsSetup(ctx context.Context) bool {
	var n int64
	if err := r.db.WithContext(ctx).Model(&models.User{}).Limit(1).Count(&n).Error; err != nil {
		return false
	}
	return n == 0
}
