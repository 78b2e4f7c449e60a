package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// vaultWorld: an owner, two members (alice made a vault with a credential,
// bob did not) and a published version to bind vaults to.
func vaultWorld(t *testing.T) (rt *runtime.Runtime, db *models.DB, owner, alice, bob runtime.Principal, vault runtime.VaultView, version string) {
	t.Helper()
	ctx := t.Context()
	db = modelstest.Open(t)
	rt = runtime.New(db, runtime.Options{})
	t.Cleanup(rt.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	person := func(email, access string) runtime.Principal {
		_, _, err := rt.UserCreate(ctx, runtime.System, email, access, "correct-horse-battery")
		must(err)
		p, err := rt.PrincipalForEmail(ctx, email)
		must(err)
		return p
	}
	owner = person("owner@example.com", runtime.AccessOwner)
	alice = person("alice@example.com", runtime.AccessMember)
	bob = person("bob@example.com", runtime.AccessMember)
	vault, err := rt.VaultCreate(ctx, alice, runtime.VaultInput{Name: "customer-a"})
	must(err)
	_, err = rt.CredentialSet(ctx, alice, runtime.CredentialInput{Vault: vault.ID, Prefix: "https://api.example.com/", Type: "bearer", Secret: "alice-secret-value"})
	must(err)
	name := "scoped"
	a, err := rt.AgentCreate(ctx, owner, runtime.AgentInput{Name: &name})
	must(err)
	ver, err := rt.VersionCreate(ctx, owner, runtime.VersionCreateInput{Agent: a.ID, Config: json.RawMessage(`{}`)})
	must(err)
	_, err = rt.VersionPublish(ctx, owner, ver.ID)
	must(err)
	return rt, db, owner, alice, bob, vault, ver.ID
}

func wantMissing(t *testing.T, what string, err error, missing string) {
	t.Helper()
	e, ok := runtime.AsError(err)
	if !ok || e.Kind != runtime.KindForbidden || e.MissingPermission != missing {
		t.Errorf("%s: want refused with missing_permission %q, got %v (%+v)", what, missing, err, e)
	}
}

// A member cannot bind, read, list the credentials of, change or delete a
// vault another member made; its maker and an owner can; each refusal is
// an Action naming the missing permission, each allowed call the one used.
func TestVaultScopedToItsMaker(t *testing.T) {
	rt, db, owner, alice, bob, vault, version := vaultWorld(t)
	ctx := t.Context()
	const missing = "vault:customer-a"

	_, err := rt.SessionCreate(ctx, bob, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}})
	wantMissing(t, "bind", err, "Vault.use "+missing)
	_, err = rt.SessionCreate(ctx, bob, runtime.SessionCreateInput{Version: version, Vaults: []string{"customer-a"}})
	wantMissing(t, "bind by name", err, "Vault.use "+missing)
	_, err = rt.VaultGet(ctx, bob, "customer-a")
	wantMissing(t, "read", err, "Vault.get "+missing)
	_, err = rt.CredentialList(ctx, bob, vault.ID)
	wantMissing(t, "list credentials", err, "Credential.list "+missing)
	_, err = rt.CredentialSet(ctx, bob, runtime.CredentialInput{Vault: vault.ID, Prefix: "https://api.example.com/", Type: "bearer", Secret: "bob-overwrites"})
	wantMissing(t, "change", err, "Credential.set "+missing)
	creds, err := rt.CredentialList(ctx, alice, vault.ID)
	if err != nil || len(creds) != 1 {
		t.Fatalf("alice's credentials: %v %v", creds, err)
	}
	err = rt.CredentialDelete(ctx, bob, vault.ID, creds[0].ID)
	wantMissing(t, "delete a credential", err, "Credential.delete "+missing)
	err = rt.VaultDelete(ctx, bob, vault.ID)
	wantMissing(t, "delete", err, "Vault.delete "+missing)
	if vs, err := rt.VaultList(ctx, bob); err != nil || len(vs) != 0 {
		t.Errorf("bob's vault list shows another's vault: %+v %v", vs, err)
	}

	// The maker and an owner still can.
	if vs, err := rt.VaultList(ctx, alice); err != nil || len(vs) != 1 {
		t.Errorf("alice's vault list: %+v %v", vs, err)
	}
	if vs, err := rt.VaultList(ctx, owner); err != nil || len(vs) != 1 {
		t.Errorf("owner's vault list: %+v %v", vs, err)
	}
	if _, err := rt.SessionCreate(ctx, alice, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}}); err != nil {
		t.Fatalf("alice binds her vault: %v", err)
	}
	if _, err := rt.SessionCreate(ctx, owner, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}}); err != nil {
		t.Fatalf("owner binds it: %v", err)
	}

	// The audit log says why, both ways.
	acts, err := rt.ActionList(ctx, owner, runtime.ActionFilter{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var refused, allowed int
	for _, a := range acts {
		switch {
		case a.By == "bob@example.com" && a.Verdict == runtime.VerdictRefused:
			refused++
			if !strings.HasSuffix(a.MissingPermission, " "+missing) || a.Reason != "missing permission "+a.MissingPermission {
				t.Errorf("refused %s: missing %q, reason %q", a.Verb, a.MissingPermission, a.Reason)
			}
		case a.By == "alice@example.com" && a.Verb == "Session.create":
			allowed++
			if a.Permission != "Session.create * (member preset)" {
				t.Errorf("alice's Session.create permission %q", a.Permission)
			}
		case a.By == "alice@example.com" && a.Verb == "Credential.set":
			if a.Permission != "Credential.* vault:"+vault.ID+" (direct)" {
				t.Errorf("alice's Credential.set permission %q", a.Permission)
			}
		}
	}
	if refused != 7 || allowed != 1 {
		t.Errorf("audit: %d refusals of bob (want 7), %d sessions of alice (want 1)", refused, allowed)
	}
	// Use of a direct permission is stamped (decay reads it).
	var p models.Permission
	if err := db.First(&p, "id = ?", "perm_cred_"+vault.ID).Error; err != nil || p.LastUsedAt == nil {
		t.Errorf("alice's Credential.* row: last_used_at %v, %v", p.LastUsedAt, err)
	}

	// Deleting the vault takes its permissions along.
	if err := rt.VaultDelete(ctx, owner, vault.ID); err == nil {
		t.Fatal("a vault bound to running sessions was deleted")
	}
}

// Giving bob the vault's permissions directly (as a role would) lets him in
// at his next call, without signing in again.
func TestVaultPermissionGivenTakesEffectAtOnce(t *testing.T) {
	rt, db, _, _, bob, vault, version := vaultWorld(t)
	ctx := t.Context()
	if _, err := rt.VaultGet(ctx, bob, vault.ID); err == nil {
		t.Fatal("bob reads alice's vault")
	}
	row := models.Permission{ID: "perm_test_bob", HolderKind: models.HolderUser, HolderID: bob.ID, Verb: "Vault.use",
		Scope: "vault:" + vault.ID, CreatedAt: vault.CreatedAt}
	if err := db.Create(&row).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SessionCreate(ctx, bob, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}}); err != nil {
		t.Fatalf("bob with Vault.use: %v", err)
	}
	// Vault.use is not Vault.get.
	_, err := rt.VaultGet(ctx, bob, vault.ID)
	wantMissing(t, "read with use only", err, "Vault.get vault:customer-a")
	if err := db.Delete(&row).Error; err != nil {
		t.Fatal(err)
	}
	_, err = rt.SessionCreate(ctx, bob, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}})
	wantMissing(t, "bind after removal", err, "Vault.use vault:customer-a")
}

// A seat's role permissions count for its person, each until it is removed
// from the seat or the seat goes; each use is stamped on the seat's row.
func TestSeatGrantsVaultUseUntilRemoved(t *testing.T) {
	rt, db, _, _, bob, vault, version := vaultWorld(t)
	ctx := t.Context()
	now := vault.CreatedAt
	role := models.Role{ID: "role_test", Name: "Billing", CreatedAt: now, UpdatedAt: now}
	perm := models.Permission{ID: "perm_test_role", HolderKind: models.HolderRole, HolderID: role.ID, Verb: "Vault.use", Scope: "vault:" + vault.ID, CreatedAt: now}
	seat := models.Seat{ID: "seat_test", UserID: bob.ID, RoleID: role.ID, CreatedAt: now}
	for _, row := range []any{&role, &perm, &seat} {
		if err := db.Create(row).Error; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.SessionCreate(ctx, bob, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}}); err != nil {
		t.Fatalf("bob seated in Billing binds the vault: %v", err)
	}
	var sp models.SeatPermission
	if err := db.First(&sp, "seat_id = ? AND permission_id = ?", seat.ID, perm.ID).Error; err != nil || sp.LastUsedAt == nil {
		t.Errorf("the seat's use was not stamped: %+v %v", sp, err)
	}
	removed := now
	if err := db.Model(&models.SeatPermission{}).Where("seat_id = ? AND permission_id = ?", seat.ID, perm.ID).Update("removed_at", &removed).Error; err != nil {
		t.Fatal(err)
	}
	_, err := rt.SessionCreate(ctx, bob, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}})
	wantMissing(t, "after the permission was removed from the seat", err, "Vault.use vault:customer-a")
	if err := db.Model(&models.SeatPermission{}).Where("seat_id = ?", seat.ID).Update("removed_at", nil).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := rt.SessionCreate(ctx, bob, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}}); err != nil {
		t.Fatalf("restored: %v", err)
	}
	if err := db.Delete(&models.Seat{}, "id = ?", seat.ID).Error; err != nil {
		t.Fatal(err)
	}
	_, err = rt.SessionCreate(ctx, bob, runtime.SessionCreateInput{Version: version, Vaults: []string{vault.ID}})
	wantMissing(t, "unseated", err, "Vault.use vault:customer-a")
}
