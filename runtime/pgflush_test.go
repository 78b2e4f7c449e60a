package runtime_test

import (
	"encoding/json"
	"testing"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// TestOpeningRecordFlushedBeforeTheCallerIsAnswered (PostgreSQL): an
// allowed call's opening record commits without waiting for the log's flush
// (runtime/pgflush.go), yet by the time its caller is answered the commit
// of that record (the call and its ToolCall.create Action) is in the part
// of PostgreSQL's log already on disk: a crash of PostgreSQL right then
// cannot lose the record of a call whose caller was answered. The log is
// read with pg_walinspect, which refuses to read past the flushed end, so
// the commit is looked for between the log's end before the calls and its
// flushed end read the moment each caller is answered. Without the flush
// (both writes committed without waiting), most echoes answer before the
// WAL writer's next flush (every 200 ms) and their commits are not found.
func TestOpeningRecordFlushedBeforeTheCallerIsAnswered(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.Postgres {
		t.Skip("PostgreSQL only: no commit waits for a flush on SQLite")
	}
	if err := db.Exec("CREATE EXTENSION IF NOT EXISTS pg_walinspect").Error; err != nil {
		t.Skipf("pg_walinspect (PostgreSQL 15's contrib) is needed to read the log: %v", err)
	}
	rt, p, session, _ := benchSessionOn(t, db)
	ctx := t.Context()
	wait := 10.0
	lsn := func(q string) string {
		var s string
		if err := db.Raw(q).Scan(&s).Error; err != nil {
			t.Fatal(err)
		}
		return s
	}
	call := func() string {
		c, err := rt.ToolCallCreate(ctx, p, runtime.ToolCallInput{Session: session, Tool: "mcp__everything__echo",
			Input: json.RawMessage(`{"message":"hi"}`), WaitSeconds: &wait})
		if err != nil || c.Status != runtime.CallSucceeded {
			t.Fatalf("echo: %v %+v", err, c)
		}
		return c.ID
	}
	call() // discovers the server's tools
	call()
	for i := range 20 {
		start := lsn("SELECT pg_current_wal_insert_lsn()::text")
		id := call()
		flushed := lsn("SELECT pg_current_wal_flush_lsn()::text") // as the caller is answered
		// The opening transaction wrote the Action's row; nothing updates it.
		var xid string
		if err := db.Raw("SELECT xmin::text FROM actions WHERE verb = 'ToolCall.create' AND targets LIKE ?", "%"+id+"%").Scan(&xid).Error; err != nil || xid == "" {
			t.Fatalf("call %s: its ToolCall.create Action: %q %v", id, xid, err)
		}
		var n int64
		if err := db.Raw("SELECT count(*) FROM pg_get_wal_records_info(?::pg_lsn, ?::pg_lsn) WHERE resource_manager = 'Transaction' AND record_type LIKE 'COMMIT%' AND xid::text = ?",
			start, flushed, xid).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("call %d (%s): its caller was answered, and the commit of its opening record (transaction %s) is not in the log flushed to disk (%s..%s)",
				i, id, xid, start, flushed)
		}
	}
}
