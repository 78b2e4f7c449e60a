package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
)

// A limit of one call refused the second with "all 1 of this hour are used",
// and a token narrowed to one permission was recorded as "1 permission(s)".
func TestLimitAndChangeSummariesReadAsEnglish(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	viewer := e.person(owner, "limited@example.com", "viewer")
	var id string
	e.rt.DB().Model(&models.User{}).Where("email = ?", "limited@example.com").Pluck("id", &id)
	if err := e.rt.DB().Create(&models.Permission{ID: "perm_limited", HolderKind: models.HolderUser, HolderID: id,
		Verb: "Agent.create", Scope: "*", LimitCount: 1, LimitPeriod: "hour", CreatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	viewerTok := viewer.token()
	if s := e.api(viewerTok, "POST", "/agents", map[string]any{"name": "first"}, nil); s != 201 {
		t.Fatalf("the first Agent.create under 1 an hour: %d", s)
	}
	var p problem
	e.api(viewerTok, "POST", "/agents", map[string]any{"name": "second"}, &p)
	if !strings.Contains(p.Detail, "the 1 call of this hour is used") || strings.Contains(p.Detail, "all 1 of") {
		t.Errorf("the refusal reads: %s", p.Detail)
	}
	if s := e.api(owner.token(), "POST", "/tokens", map[string]any{"name": "narrow", "permissions": []string{"Vault.list"}}, nil); s != 201 {
		t.Fatalf("narrowed token: %d", s)
	}
	_, page := owner.get("/changes")
	if !strings.Contains(page, "narrowed to 1 permission") || strings.Contains(page, "permission(s)") {
		t.Errorf("the Changes page does not say \"narrowed to 1 permission\"")
	}
}
