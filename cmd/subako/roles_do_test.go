package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
)

// Roles, seats and Changes with `subako do`: the same verbs and checks as
// the API, a refused one naming its field.
func TestRolesSeatsAndChangesWithDo(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	db := []string{"--data", dir, "--database-url", url}
	for _, who := range []string{"owner@example.com owner", "bob@example.com member"} {
		email, access, _ := strings.Cut(who, " ")
		if err := userCmd(append([]string{"add", "--email", email, "--access", access, "--password-stdin"}, db...),
			strings.NewReader("correct-horse-battery\n"), io.Discard); err != nil {
			t.Fatalf("user add %s: %v", email, err)
		}
	}
	var tok strings.Builder
	if err := tokenCmd(append([]string{"create", "--email", "owner@example.com", "--expires", "1h"}, db...), &tok); err != nil {
		t.Fatal(err)
	}
	srv := serveDB(t, dir, url)
	t.Setenv("SUBAKO_URL", srv.URL)
	t.Setenv("SUBAKO_TOKEN", strings.TrimSpace(tok.String()))

	var vault struct{ ID string }
	doJSON(t, &vault, "Vault.create", `{"name": "customer-a"}`)
	var role struct {
		ID          string
		Name        string
		Permissions []struct{ Verb, Scope, ScopeName string }
	}
	doJSON(t, &role, "Role.create", `{"name": "Keeper", "decay_days": 30, "permissions": [{"verb": "Vault.*", "scope": "vault:`+vault.ID+`"}]}`)
	if role.Name != "Keeper" || len(role.Permissions) != 1 || role.Permissions[0].Verb != "Vault.*" {
		t.Fatalf("Role.create: %+v", role)
	}
	if said, err := doRefused(t, "Role.create", `{"name": "x", "permissions": [{"verb": "Vault.use", "scope": "vault:vlt_nowhere"}]}`); err == nil ||
		!strings.Contains(err.Error(), "422") || !strings.Contains(said, `"field": "permissions[0].scope"`) {
		t.Fatalf("a scope naming no vault: %v %s", err, said)
	}
	doJSON(t, &role, "Role.update", `{"role": "Keeper", "description": "keeps customer-a"}`)
	var got struct{ Description string }
	doJSON(t, &got, "Role.get", `{"role": "`+role.ID+`"}`)
	if got.Description != "keeps customer-a" {
		t.Fatalf("Role.get after Role.update: %+v", got)
	}
	var seat struct {
		ID, Email string
		RoleName  string `json:"role_name"`
	}
	doJSON(t, &seat, "Seat.create", `{"user": "bob@example.com", "role": "Keeper"}`)
	if seat.Email != "bob@example.com" || seat.RoleName != "Keeper" {
		t.Fatalf("Seat.create: %+v", seat)
	}
	var seats []struct{ ID string }
	doJSON(t, &seats, "Seat.list", `{"role": "Keeper"}`)
	if len(seats) != 1 || seats[0].ID != seat.ID {
		t.Fatalf("Seat.list: %+v", seats)
	}
	if err := doCmd([]string{"Seat.delete", "--json", `{"seat": "` + seat.ID + `"}`}, nil, io.Discard); err != nil {
		t.Fatalf("Seat.delete: %v", err)
	}
	var changes []struct{ ID, Kind, Summary string }
	doJSON(t, &changes, "Change.list", `{"kind": "seat.delete"}`)
	if len(changes) != 1 || !strings.Contains(changes[0].Summary, "unseated bob@example.com from role Keeper") {
		t.Fatalf("Change.list: %+v", changes)
	}
	var undo struct {
		UndoOf string `json:"undo_of"`
	}
	doJSON(t, &undo, "Change.undo", `{"change": "`+changes[0].ID+`"}`)
	if undo.UndoOf != changes[0].ID {
		t.Fatalf("Change.undo: %+v", undo)
	}
	doJSON(t, &seats, "Seat.list", `{"user": "bob@example.com"}`)
	if len(seats) != 1 {
		t.Fatalf("after the undo bob's seats: %+v", seats)
	}
	if said, err := doRefused(t, "Role.delete", `{"role": "member"}`); err == nil || !strings.Contains(said, "built-in access level") {
		t.Fatalf("Role.delete member: %v %s", err, said)
	}
	if err := doCmd([]string{"Role.delete", "--json", `{"role": "` + role.ID + `"}`}, nil, io.Discard); err != nil {
		t.Fatalf("Role.delete: %v", err)
	}
}

// doRefused runs a verb expected to be refused and returns what it said on
// standard error (the problem the server answered).
func doRefused(t *testing.T, verb, input string) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	derr := doCmd([]string{verb, "--json", input}, nil, io.Discard)
	os.Stderr = stderr
	w.Close()
	said, _ := io.ReadAll(r)
	r.Close()
	return string(said), derr
}
