package web_test

import (
	"strings"
	"testing"
)

// A narrowed token's refusal says the token is narrowed: its holder, an
// owner, may create agents, so "owner may not Agent.create" alone was untrue.
func TestNarrowedTokenRefusalSaysTheTokenIsNarrowed(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	var made struct {
		Token string `json:"token"`
	}
	if s := e.api(owner.token(), "POST", "/tokens", map[string]any{"name": "narrow", "permissions": []string{"Vault.list"}}, &made); s != 201 {
		t.Fatalf("Token.create narrowed: %d", s)
	}
	var p problem
	if s := e.api(made.Token, "POST", "/agents", map[string]any{"name": "x"}, &p); s != 403 {
		t.Fatalf("Agent.create with a token narrowed to Vault.list: %d", s)
	}
	if p.MissingPermission != "Agent.create" || !strings.Contains(p.Detail, "with this token (narrowed") {
		t.Errorf("the refusal: %+v", p)
	}
	// The holder's own token (not narrowed) is allowed; a viewer's refusal
	// does not speak of narrowing.
	if s := e.api(owner.token(), "POST", "/agents", map[string]any{"name": "y"}, nil); s != 201 {
		t.Errorf("Agent.create with the owner's token: %d", s)
	}
	viewer := e.person(owner, "viewer@example.com", "viewer")
	var v problem
	e.api(viewer.token(), "POST", "/agents", map[string]any{"name": "z"}, &v)
	if v.MissingPermission != "Agent.create" || strings.Contains(v.Detail, "narrowed") {
		t.Errorf("a viewer's refusal: %+v", v)
	}
}
