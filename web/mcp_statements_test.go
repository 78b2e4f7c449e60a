package web_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
)

// sqlLog keeps the SQL of every statement run while it is on.
type sqlLog struct {
	mu   sync.Mutex
	on   bool
	sqls []string
}

func (l *sqlLog) hook(tx *gorm.DB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on && tx.Statement != nil && !tx.DryRun { // a dry run builds a statement and runs nothing
		l.sqls = append(l.sqls, tx.Statement.SQL.String())
	}
}

// during returns the statements f ran.
func (l *sqlLog) during(f func()) []string {
	l.mu.Lock()
	l.on, l.sqls = true, nil
	l.mu.Unlock()
	f()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.sqls
}

// maxEchoStatements: see TestMCPEndpointAddsNoStatementsToACall.
const (
	maxEchoStatements   = 3
	maxEchoStatementsPG = 2
)

// The MCP endpoint adds no statement to a call: once warm, an echo through a
// session's endpoint (its token checked, the session reached, the call made
// and answered) issues exactly the statements ToolCall.create issues for the
// same call made in process. A token looked up again per request, or the
// session re-read to authorize it, fails here.
//
// And the number is fixed: a warm allowed echo with its credential attached
// runs at most maxEchoStatements statements (BEGIN and COMMIT not counted):
// the call and its ToolCall.create Action (one transaction) and its result.
// On PostgreSQL the call and its Action are one statement, so 2 in all (the
// flush of the opening record runs outside gorm, shared by the calls that
// ask meanwhile: runtime/pgflush.go). docs/benchmarks.md states the same
// numbers.
func TestMCPEndpointAddsNoStatementsToACall(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	cs := w.mcpAs(s.Token, s.ID)
	log := &sqlLog{}
	cb := w.rt.DB().Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("test:sql", log.hook),
		cb.Query().After("gorm:query").Register("test:sql", log.hook),
		cb.Update().After("gorm:update").Register("test:sql", log.hook),
		cb.Delete().After("gorm:delete").Register("test:sql", log.hook),
		cb.Row().After("gorm:row").Register("test:sql", log.hook),
		cb.Raw().After("gorm:raw").Register("test:sql", log.hook),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	overMCP := func() {
		res, err := cs.CallTool(t.Context(), echoParams("counted"))
		if err != nil || res.IsError || !strings.Contains(resultText(res), "Echo: counted") {
			t.Fatalf("echo over MCP: %v %+v", err, res)
		}
	}
	p := runtime.SessionPrincipal(s.ID, "test")
	wait := 10.0
	inProcess := func() {
		c, err := w.rt.ToolCallCreate(t.Context(), p, runtime.ToolCallInput{Session: s.ID, Tool: "mcp__everything__echo",
			Input: json.RawMessage(`{"message":"counted"}`), WaitSeconds: &wait})
		if err != nil || c.Status != runtime.CallSucceeded {
			t.Fatalf("echo in process: %v %+v", err, c)
		}
	}
	for range 3 { // warm both: tools discovered, token remembered, statements prepared
		overMCP()
		inProcess()
	}
	// The fewest of a few tries, so a background sweep that happens to run
	// during one call is not counted against it.
	fewest := func(f func()) []string {
		var best []string
		for i := range 3 {
			if got := log.during(f); i == 0 || len(got) < len(best) {
				best = got
			}
		}
		return best
	}
	mcpSQL, directSQL := fewest(overMCP), fewest(inProcess)
	limit := maxEchoStatements
	if w.rt.DB().Dialect == models.Postgres {
		limit = maxEchoStatementsPG
	}
	if len(mcpSQL) > limit {
		t.Errorf("an echo over the MCP endpoint ran %d statements, more than the %d stated in docs/benchmarks.md:\n  %s",
			len(mcpSQL), limit, strings.Join(mcpSQL, "\n  "))
	}
	if len(mcpSQL) != len(directSQL) {
		t.Fatalf("an echo over the MCP endpoint ran %d statements, the same call in process %d:\nendpoint:\n  %s\nin process:\n  %s",
			len(mcpSQL), len(directSQL), strings.Join(mcpSQL, "\n  "), strings.Join(directSQL, "\n  "))
	}
	t.Logf("an echo over the MCP endpoint: %d statements, as in process", len(mcpSQL))
}
