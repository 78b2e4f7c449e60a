package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime"
)

func TestUsagePageAndAPI(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, u := range []runtime.Usage{
		{Kind: runtime.UsageMachineSeconds, SessionID: "ses_a", AgentID: "ag_a", Subject: "sbx_1", Quantity: 3600, Unit: "second", Credits: 3600 * runtime.PriceMachineSecond, Start: start, End: start.Add(time.Hour)},
		{Kind: runtime.UsageFunctionSeconds, SessionID: "ses_a", AgentID: "ag_a", Subject: "call_1", Quantity: 2, Unit: "second", Credits: 2 * runtime.PriceFunctionSecond, Start: start, End: start.Add(2 * time.Second)},
		{Kind: runtime.UsageFunctionSeconds, SessionID: "ses_b", AgentID: "ag_b", Subject: "call_2", Quantity: 1, Unit: "second", Credits: runtime.PriceFunctionSecond, Start: start.AddDate(0, 1, 0), End: start.AddDate(0, 1, 0).Add(time.Second)},
		{Kind: runtime.UsageArchiveBytes, SessionID: "ses_a", AgentID: "ag_a", Subject: "sbx_1", Quantity: 2e9, Unit: "byte", Start: start, End: start.Add(3 * time.Hour)},
	} {
		if err := e.rt.RecordUsage(t.Context(), u); err != nil {
			t.Fatal(err)
		}
	}
	var rep struct {
		Credits float64
		Totals  []struct {
			Kind     string
			Quantity float64
			Credits  float64
		}
	}
	if st := e.api(tok, "GET", "/usage?from=2026-11-01&to=2026-12-01", nil, &rep); st != 200 {
		t.Fatalf("Usage.get: %d", st)
	}
	// An hour of machine time is 100 SC ($1.00); two function seconds 0.02 SC; December's call is outside.
	// A 2 GB archive kept 3 hours is 6 GB-hours of storage, not 2 GB summed per record.
	if len(rep.Totals) != 3 || rep.Totals[2].Kind != "archive_bytes" || rep.Totals[2].Quantity != 6 {
		t.Fatalf("archive storage: %+v", rep.Totals)
	}
	// A time with another offset selects the same window.
	var shifted struct{ Totals []struct{ Kind string } }
	e.api(tok, "GET", "/usage?from=2026-11-02T12:30:00%2B02:00&to=2026-11-03T00:00:00%2B02:00", nil, &shifted)
	if len(shifted.Totals) != 2 || shifted.Totals[0].Kind != "machine_seconds" {
		t.Fatalf("records overlapping 10:30Z onwards: %+v", shifted)
	}
	if len(rep.Totals) != 3 || rep.Totals[0].Kind != "function_seconds" || rep.Totals[0].Quantity != 2 ||
		rep.Totals[1].Kind != "machine_seconds" || rep.Credits < 100.0199 || rep.Credits > 100.0201 {
		t.Fatalf("November's usage: %+v", rep)
	}
	// A date as the end of the period includes that whole day.
	var oneDay struct{ Totals []struct{ Kind string } }
	e.api(tok, "GET", "/usage?from=2026-11-02&to=2026-11-02", nil, &oneDay)
	if len(oneDay.Totals) != 3 {
		t.Fatalf("usage from the 2nd to the 2nd: %+v, want the day's three kinds", oneDay)
	}
	e.api(tok, "GET", "/usage?agent=ag_b", nil, &rep)
	if len(rep.Totals) != 1 || rep.Totals[0].Quantity != 1 {
		t.Fatalf("usage of agent ag_b: %+v", rep)
	}
	var p problem
	if st := e.api(tok, "GET", "/usage?from=yesterday", nil, &p); st != 422 || p.Field != "from" {
		t.Fatalf("a bad date: %d %+v", st, p)
	}
	_, page := owner.get("/usage?from=2026-11-01&to=2026-12-01")
	if !strings.Contains(page, "Sandbox machine time") || !strings.Contains(page, "100.02 SC") || strings.Contains(page, "call_2") {
		t.Fatal("the Usage page does not show November's totals")
	}
}
