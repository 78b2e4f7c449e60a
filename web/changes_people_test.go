package web_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// pascalKey finds a JSON key in Go's field spelling ("Name", "CreatedAt").
var pascalKey = regexp.MustCompile(`"[A-Z][A-Za-z]*":`)

// Every change to who may do what is a Change with before and after in
// snake_case: a person's access level (undoable), their removal, the direct
// permissions Vault.create gives its maker, tenants and roles; the kinds
// without an undo say so.
func TestPeopleVaultsAndTenantsAreChanges(t *testing.T) {
	e := &env{t: t, clock: &clock{now: time.Now().UTC()}}
	e.serve(runtime.New(modelstest.Open(t), runtime.Options{Clock: e.clock, Log: quiet}))
	owner := e.owner()
	tok := owner.token()
	e.person(owner, "pat@example.com", "member")
	pat := userIDOf(t, e, tok, "pat@example.com")
	changes := func(kind string) []runtime.ChangeView {
		t.Helper()
		var cs []runtime.ChangeView
		if st := e.api(tok, "GET", "/changes?kind="+kind, nil, &cs); st != 200 {
			t.Fatalf("Change.list kind=%s: %d", kind, st)
		}
		return cs
	}

	if st := e.api(tok, "PATCH", "/users/"+pat, map[string]any{"access": "none"}, nil); st != 200 {
		t.Fatalf("User.update: %d", st)
	}
	cs := changes("user.access")
	if len(cs) != 1 || !cs[0].Undoable || cs[0].Subject != pat || !strings.Contains(cs[0].Summary, "from member to none") ||
		!strings.Contains(string(cs[0].Before), `"access":"member"`) || !strings.Contains(string(cs[0].After), `"access":"none"`) {
		t.Fatalf("the access change: %+v", cs)
	}
	var undo runtime.ChangeView
	if st := e.api(tok, "POST", "/changes/"+cs[0].ID+"/undo", nil, &undo); st != 200 {
		t.Fatalf("Change.undo of the access change: %d", st)
	}
	var users []struct{ Email, Access string }
	e.api(tok, "GET", "/users", nil, &users)
	for _, u := range users {
		if u.Email == "pat@example.com" && u.Access != "member" {
			t.Fatalf("after the undo pat is %s, want member", u.Access)
		}
	}
	var p problem
	if st := e.api(tok, "POST", "/changes/"+cs[0].ID+"/undo", nil, &p); st != 409 || p.Code != "already_undone" {
		t.Fatalf("a second undo: %d %+v", st, p)
	}

	var v struct{ ID string }
	if st := e.api(tok, "POST", "/vaults", map[string]any{"name": "billing"}, &v); st != 201 {
		t.Fatalf("Vault.create: %d", st)
	}
	cs = changes("vault.create")
	if len(cs) != 1 || cs[0].Undoable || cs[0].Subject != v.ID || !strings.Contains(string(cs[0].After), `"Vault.* vault:`+v.ID+`"`) {
		t.Fatalf("the vault maker's permissions: %+v", cs)
	}
	if st := e.api(tok, "POST", "/changes/"+cs[0].ID+"/undo", nil, &p); st != 409 || p.Code != "not_undoable" {
		t.Fatalf("undo of vault.create: %d %+v", st, p)
	}

	if st := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, nil); st != 201 {
		t.Fatalf("Tenant.create: %d", st)
	}
	if st := e.api(tok, "POST", "/roles", map[string]any{"name": "Keeper", "permissions": []map[string]any{{"verb": "Vault.get", "scope": "vault:" + v.ID}}}, nil); st != 201 {
		t.Fatalf("Role.create: %d", st)
	}
	if cs = changes("tenant.create"); len(cs) != 1 || !strings.Contains(string(cs[0].After), `"name":"acme"`) {
		t.Fatalf("the tenant change: %+v", cs)
	}

	if st := e.api(tok, "DELETE", "/users/"+pat, nil, nil); st != 204 && st != 200 {
		t.Fatalf("User.remove: %d", st)
	}
	cs = changes("user.remove")
	if len(cs) != 1 || cs[0].Undoable || len(cs[0].After) != 0 || !strings.Contains(string(cs[0].Before), `"email":"pat@example.com"`) {
		t.Fatalf("the removal: %+v", cs)
	}

	// Every Change's sides read in snake_case, as the rest of the API.
	var all []runtime.ChangeView
	e.api(tok, "GET", "/changes?limit=200", nil, &all)
	for _, c := range all {
		for _, side := range []string{string(c.Before), string(c.After)} {
			if k := pascalKey.FindString(side); k != "" {
				t.Errorf("%s change has the key %s: %s", c.Kind, k, side)
			}
		}
	}
}
