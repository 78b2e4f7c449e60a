package runtime

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// The CSV export writes every record once, newest first, across its
// batches of 500, when many records share their start to the second and a
// batch ends inside one (ties broken by id, the greater first, as the
// list's pages do).
func TestUsageCSVWritesEveryRecordOnceAcrossBatches(t *testing.T) {
	db := modelstest.Open(t)
	rt := New(db, Options{})
	t.Cleanup(rt.Close)
	base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	const n = 2*usageCSVBatch + 237
	recs := make([]models.UsageRecord, 0, n)
	for i := range n {
		at := base.Add(-time.Duration(i/7) * time.Second) // seven a second: batches of 500 end inside a second
		recs = append(recs, models.UsageRecord{ID: fmt.Sprintf("use_%05d", i), Kind: UsageFunctionSeconds, SessionID: "ses_x", AgentID: "agt_x",
			Subject: fmt.Sprintf("call_%d", i), Quantity: 1, Unit: "second", Credits: PriceFunctionSecond, StartedAt: at, EndedAt: at.Add(time.Second)})
	}
	if err := db.CreateInBatches(recs, 200).Error; err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rt.UsageCSV(t.Context(), System, UsageFilter{}, &buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n+1 {
		t.Fatalf("the export has %d records, want %d", len(rows)-1, n)
	}
	// Newest second first; within a second, the greater id first.
	for k, row := range rows[1:] {
		newest := min(k/7*7+6, n-1) // the last second holds 5
		if want := fmt.Sprintf("use_%05d", newest-k%7); row[0] != want {
			t.Fatalf("record %d is %s, want %s", k, row[0], want)
		}
	}
	// Each batch after the first is a seek in the records' index, not a
	// read of every record older than the last one written.
	if db.Dialect == models.SQLite {
		sql := db.ToSQL(func(tx *gorm.DB) *gorm.DB {
			return keyset(tx.Model(&models.UsageRecord{}), "started_at", "id", Cursor{At: base, ID: "use_00500"}, true, usageCSVBatch-1).Find(&[]models.UsageRecord{})
		})
		if plan := queryPlan(t, db, sql); !strings.Contains(plan, "USING INDEX usage_records_page (started_at<?)") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("a batch after the first reads %q, want a seek in usage_records_page with no sort", plan)
		}
	}
}
