package web_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
)

// seedNamedUsage records November's usage of a named agent and session (and
// one in December), as TestUsagePageAndAPI does, with names to show.
func seedNamedUsage(t *testing.T, e *env) {
	t.Helper()
	db := e.rt.DB()
	if err := db.Create(&models.Agent{ID: "ag_a", Name: "support-bot", CreatedAt: time.Now(), UpdatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&models.Version{ID: "ver_a", AgentID: "ag_a", Number: 1, State: "published", Config: "{}", CreatedAt: time.Now(), UpdatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&models.Session{ID: "ses_a", VersionID: "ver_a", AgentID: "ag_a", Title: "=Acme triage", State: "ended", CreatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, u := range []runtime.Usage{
		{Kind: runtime.UsageMachineSeconds, SessionID: "ses_a", AgentID: "ag_a", Subject: "sbx_1", Quantity: 5400, Unit: "second", Credits: 5400 * runtime.PriceMachineSecond, Start: start, End: start.Add(90 * time.Minute)},
		{Kind: runtime.UsageFunctionSeconds, SessionID: "ses_a", AgentID: "ag_a", Subject: "call_1", Quantity: 2, Unit: "second", Credits: 2 * runtime.PriceFunctionSecond, Start: start.AddDate(0, 0, 1), End: start.AddDate(0, 0, 1).Add(2 * time.Second)},
		{Kind: runtime.UsageArchiveBytes, SessionID: "ses_a", AgentID: "ag_a", Subject: "sbx_1", Quantity: 2e9, Unit: "byte", Start: start, End: start.Add(3 * time.Hour)},
		{Kind: runtime.UsageFunctionSeconds, SessionID: "ses_b", AgentID: "ag_b", Subject: "call_2", Quantity: 1, Unit: "second", Credits: runtime.PriceFunctionSecond, Start: start.AddDate(0, 1, 0), End: start.AddDate(0, 1, 0).Add(time.Second)},
	} {
		if err := e.rt.RecordUsage(t.Context(), u); err != nil {
			t.Fatal(err)
		}
	}
}

// Usage names agents and sessions, says amounts in human units, and draws SC
// per day by kind as an SVG with a title and the same numbers as a table.
func TestUsageShowsNamesUnitsAndAChart(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	seedNamedUsage(t, e)
	page := mustGet(owner, "/usage?from=2026-11-01&to=2026-12-01")
	for _, want := range []string{
		`<a href="/agents/ag_a">support-bot</a>`, `<a href="/sessions/ses_a">=Acme triage</a>`,
		"<td>1 h 30 min</td>", "<td>1.9 GiB</td>", "<td>2 s</td>",
		`<svg class="usage-chart" role="img"`, "<title id=\"usage-chart-svg-title\">SC per day by kind</title>",
		`<td>2026-11-02</td><td>0.00</td><td>150.00</td><td>0.00</td><td>150.00</td>`,
		`<td>2026-11-03</td><td>0.02</td><td>0.00</td><td>0.00</td><td>0.02</td>`,
		`href="/usage.csv?from=2026-11-01&amp;to=2026-12-01"`, `<option value="ag_a">support-bot</option>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the Usage page lacks %s", want)
		}
	}
	if strings.Contains(page, "2026-12-02") || strings.Contains(page, ">ses_a<") || strings.Contains(page, ">ag_a<") {
		t.Error("the Usage page shows December or ids where names are known")
	}
	var rep struct {
		Days    []struct{ Day string }
		Records []struct{ AgentName, SessionTitle string } `json:"records"`
	}
	if st := e.api(owner.token(), "GET", "/usage?from=2026-11-01&to=2026-12-01", nil, &rep); st != 200 || len(rep.Days) != 2 {
		t.Fatalf("Usage.get days: %d %+v", st, rep)
	}
}

// /usage.csv, and Usage.get asked for text/csv, answer every record the same
// filters select, names beside ids; a bad filter is refused naming its field.
func TestUsageCSVExport(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	seedNamedUsage(t, e)
	resp, body := owner.get("/usage.csv?from=2026-11-01&to=2026-12-01")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("/usage.csv answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("CSV has %d rows (%v), want a header and November's 3:\n%s", len(rows), err, body)
	}
	if strings.Join(rows[0], ",") != "id,kind,agent,agent_name,session,session_title,subject,quantity,unit,credits,started_at,ended_at" {
		t.Fatalf("CSV header: %v", rows[0])
	}
	// Newest first; a title that starts like a formula is quoted for spreadsheets.
	if r := rows[1]; r[1] != "function_seconds" || r[3] != "support-bot" || r[5] != "'=Acme triage" || r[7] != "2" || r[10] != "2026-11-03T10:00:00Z" {
		t.Fatalf("first CSV row: %v", r)
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/usage?agent=ag_b", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/csv")
	api, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rows, err = csv.NewReader(api.Body).ReadAll()
	api.Body.Close()
	if err != nil || len(rows) != 2 || rows[1][4] != "ses_b" || rows[1][3] != "" {
		t.Fatalf("Usage.get as CSV for ag_b: %v %v", rows, err)
	}
	if resp, _ := owner.get("/usage.csv?from=yesterday"); resp.StatusCode != 422 {
		t.Fatalf("a bad date in /usage.csv answered %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("GET", e.srv.URL+"/api/v1/usage?to=tomorrow", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/csv")
	bad, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var p problem
	_ = json.NewDecoder(bad.Body).Decode(&p)
	bad.Body.Close()
	if bad.StatusCode != 422 || p.Field != "to" {
		t.Fatalf("a bad date as CSV on the API: %d %+v", bad.StatusCode, p)
	}
}
