package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
)

// A call over a permission's limit answers 429 limit_reached with
// Retry-After until the period resets, and the Audit page shows the refusal.
func TestLimitReachedAnswers429AndShowsOnTheAuditPage(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	viewer := e.person(owner, "limited@example.com", "viewer")
	var id string
	e.rt.DB().Model(&models.User{}).Where("email = ?", "limited@example.com").Pluck("id", &id)
	if err := e.rt.DB().Create(&models.Permission{ID: "perm_limited", HolderKind: models.HolderUser, HolderID: id,
		Verb: "Agent.create", Scope: "*", LimitCount: 1, LimitPeriod: "hour", CreatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	tok := viewer.token()
	if s := e.api(tok, "POST", "/agents", map[string]any{"name": "first"}, nil); s != 201 {
		t.Fatalf("the first Agent.create under 1 an hour: %d", s)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/agents", strings.NewReader(`{"name": "second"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || wait <= 0 || wait > 3600 {
		t.Fatalf("the second Agent.create: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var p problem
	e.api(tok, "POST", "/agents", map[string]any{"name": "third"}, &p)
	if p.Code != "limit_reached" || !strings.Contains(p.Detail, "Agent.create * (direct; 1 an hour)") || !strings.Contains(p.Detail, "resets at") {
		t.Errorf("the refusal: %+v", p)
	}
	_, page := owner.get("/audit")
	if !strings.Contains(page, "limit reached: Agent.create * (direct; 1 an hour)") {
		t.Errorf("the Audit page does not show the limit refusal")
	}
}
