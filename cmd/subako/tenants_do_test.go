package main

import (
	"io"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
)

// Tenants with `subako do`: the same verbs as the API, a bad name refused
// naming its field, a vault and an invitation made in a tenant.
func TestTenantsWithDo(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	db := []string{"--data", dir, "--database-url", url}
	if err := userCmd(append([]string{"add", "--email", "owner@example.com", "--access", "owner", "--password-stdin"}, db...),
		strings.NewReader("correct-horse-battery\n"), io.Discard); err != nil {
		t.Fatal(err)
	}
	var tok strings.Builder
	if err := tokenCmd(append([]string{"create", "--email", "owner@example.com", "--expires", "1h"}, db...), &tok); err != nil {
		t.Fatal(err)
	}
	srv := serveDB(t, dir, url)
	t.Setenv("SUBAKO_URL", srv.URL)
	t.Setenv("SUBAKO_TOKEN", strings.TrimSpace(tok.String()))

	var ten struct{ ID, Name string }
	doJSON(t, &ten, "Tenant.create", `{"name": "acme"}`)
	if ten.Name != "acme" || !strings.HasPrefix(ten.ID, "ten_") {
		t.Fatalf("Tenant.create: %+v", ten)
	}
	if said, err := doRefused(t, "Tenant.create", `{"name": "Acme Corp"}`); err == nil || !strings.Contains(said, `"field": "name"`) {
		t.Fatalf("a bad tenant name: %v %s", err, said)
	}
	var vlt struct{ ID, Tenant string }
	doJSON(t, &vlt, "Vault.create", `{"name": "acme-keys", "tenant": "acme"}`)
	if vlt.Tenant != ten.ID {
		t.Fatalf("Vault.create in acme: %+v", vlt)
	}
	var inv struct {
		Invite struct{ Tenant string }
	}
	doJSON(t, &inv, "User.invite", `{"email": "admin@acme.example", "access": "admin", "tenant": "acme"}`)
	if inv.Invite.Tenant != ten.ID {
		t.Fatalf("User.invite into acme: %+v", inv)
	}
	doJSON(t, &ten, "Tenant.update", `{"tenant": "acme", "name": "acme-corp"}`)
	var got struct {
		Name   string
		Vaults int
	}
	doJSON(t, &got, "Tenant.get", `{"tenant": "`+ten.ID+`"}`)
	if got.Name != "acme-corp" || got.Vaults != 1 {
		t.Fatalf("Tenant.get after Tenant.update: %+v", got)
	}
	var all []struct{ Name string }
	doJSON(t, &all, "Tenant.list", `{}`)
	if len(all) != 1 || all[0].Name != "acme-corp" {
		t.Fatalf("Tenant.list: %+v", all)
	}
	if said, err := doRefused(t, "Tenant.delete", `{"tenant": "acme-corp"}`); err == nil || !strings.Contains(said, "tenant_not_empty") {
		t.Fatalf("deleting a tenant holding a vault: %v %s", err, said)
	}
}
