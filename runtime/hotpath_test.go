package runtime_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// statementLog counts the statements a database handle runs, with their SQL.
type statementLog struct {
	mu   sync.Mutex
	on   bool
	sqls []string
}

func (l *statementLog) hook(db *gorm.DB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on && !db.DryRun { // a dry run builds a statement and runs nothing
		l.sqls = append(l.sqls, db.Statement.SQL.String())
	}
}

func (l *statementLog) start() {
	l.mu.Lock()
	l.on, l.sqls = true, nil
	l.mu.Unlock()
}

func (l *statementLog) stop() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.sqls
}

func logStatements(t testing.TB, db *models.DB) *statementLog {
	l := &statementLog{}
	cb := db.Callback()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cb.Create().After("gorm:create").Register("test:count", l.hook))
	must(cb.Query().After("gorm:query").Register("test:count", l.hook))
	must(cb.Update().After("gorm:update").Register("test:count", l.hook))
	must(cb.Delete().After("gorm:delete").Register("test:count", l.hook))
	must(cb.Row().After("gorm:row").Register("test:count", l.hook))
	must(cb.Raw().After("gorm:raw").Register("test:count", l.hook))
	return l
}

// The statements one allowed call may issue once the session is warm: the
// call and its Action (one transaction: 2 inserts), its result (1 update).
// On PostgreSQL the call and its Action are one statement (a WITH of the two
// inserts, runtime/pgflush.go), so 2 in all; the flush that makes the
// opening record durable while the tool runs is not counted: the flusher
// runs it on the pool, outside gorm, one for every call that asked
// meanwhile (TestOpeningRecordFlushedBeforeTheCallerIsAnswered checks
// it). A skill read's skill and file come from memory, and it is
// recorded once, finished (2 inserts on SQLite; on PostgreSQL the one
// statement). docs/benchmarks.md states the same numbers; a change that
// makes the path grow fails here.
const (
	maxMCPCallStatements     = 3
	maxSkillReadStatements   = 2
	maxMCPCallStatementsPG   = 2
	maxSkillReadStatementsPG = 1
)

// TestCallStatementCount: an allowed MCP call with a credential attached, and
// a skill read, each issue at most their stated number of statements, and
// touch no row other calls share (no credential, no session).
func TestCallStatementCount(t *testing.T) {
	db := modelstest.Open(t)
	rt, p, session, _ := benchSessionOn(t, db)
	log := logStatements(t, db)
	wait := 10.0
	for _, tc := range []struct {
		tool, input string
		limit, pg   int
	}{
		{"mcp__everything__echo", `{"message":"hi"}`, maxMCPCallStatements, maxMCPCallStatementsPG},
		{"skill__policy__read", `{"path":"refunds.md"}`, maxSkillReadStatements, maxSkillReadStatementsPG},
	} {
		limit := tc.limit
		if db.Dialect == models.Postgres {
			limit = tc.pg
		}
		call := func() {
			c, err := rt.ToolCallCreate(t.Context(), p, runtime.ToolCallInput{Session: session, Tool: tc.tool, Input: json.RawMessage(tc.input), WaitSeconds: &wait})
			if err != nil || c.Status != runtime.CallSucceeded {
				t.Fatalf("%s: %v %+v", tc.tool, err, c)
			}
		}
		// The first call of a session discovers the server's tools; the
		// discovery's record invalidates what that call built, and the
		// second builds what later calls reuse.
		call()
		call()
		for i := range 3 {
			log.start()
			call()
			sqls := log.stop()
			if len(sqls) > limit {
				t.Errorf("%s (call %d) issued %d statements, more than %d:\n%s", tc.tool, i+3, len(sqls), limit, strings.Join(sqls, "\n"))
			}
			for _, q := range sqls {
				if strings.Contains(q, "credentials") || strings.Contains(q, "sessions") {
					t.Errorf("%s reads or writes a credential or session row on a warm call: %s", tc.tool, q)
				}
			}
			if testing.Verbose() {
				fmt.Printf("%s: %d statements\n%s\n", tc.tool, len(sqls), strings.Join(sqls, "\n"))
			}
		}
	}
}

// TestHotPathFollowsChanges: what calls reuse from memory changes at once
// with what it was built from: a credential replaced is the one the next
// call attaches, an ended session refuses the next call; and the last use
// of a credential reaches its row when the runtime closes.
func TestHotPathFollowsChanges(t *testing.T) {
	db := modelstest.Open(t)
	rt, p, session, url := benchSessionOn(t, db)
	ctx := t.Context()
	owner, err := rt.PrincipalForEmail(ctx, "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	vaults, err := rt.VaultList(ctx, owner)
	if err != nil || len(vaults) != 1 {
		t.Fatalf("vaults: %v %v", vaults, err)
	}
	wait := 10.0
	echo := func() (runtime.ToolCallView, error) {
		return rt.ToolCallCreate(ctx, p, runtime.ToolCallInput{Session: session, Tool: "mcp__everything__echo", Input: json.RawMessage(`{"message":"hi"}`), WaitSeconds: &wait})
	}
	for range 3 {
		if c, err := echo(); err != nil || c.Status != runtime.CallSucceeded {
			t.Fatalf("echo: %v %+v", err, c)
		}
	}
	setSecret := func(secret string) {
		t.Helper()
		if _, err := rt.CredentialSet(ctx, owner, runtime.CredentialInput{Vault: vaults[0].ID, Prefix: url, Type: "bearer", Secret: secret}); err != nil {
			t.Fatal(err)
		}
	}
	setSecret("wrong-token-0123456789")
	if c, err := echo(); err != nil || c.Status != runtime.CallFailed {
		t.Fatalf("right after the credential was replaced by a wrong one, the call still used the old one: %v %+v", err, c)
	}
	setSecret(benchToken)
	if c, err := echo(); err != nil || c.Status != runtime.CallSucceeded {
		t.Fatalf("with the right secret back: %v %+v", err, c)
	}
	if _, err := rt.SessionEnd(ctx, owner, session); err != nil {
		t.Fatal(err)
	}
	if c, err := echo(); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("a call right after the session ended: %v %+v", err, c)
	}
	var used struct{ LastUsedAt *time.Time }
	rt.Close()
	if err := db.Table("credentials").Select("last_used_at").Take(&used).Error; err != nil {
		t.Fatal(err)
	}
	if used.LastUsedAt == nil {
		t.Fatal("after Close the credential's row does not say it was used")
	}
}
