package runtime_test

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

type holdIn struct {
	Message string `json:"message"`
}

// A call whose opening record the database lost (what a crash of PostgreSQL
// before its log was flushed leaves: the opening commits without waiting for
// the flush) and whose finishing write then fails because the database went
// away: once the database answers again, the whole record is written, the
// call as finished and its ToolCall.create Action, and only then is the
// caller answered. On PostgreSQL the database really goes away (it refuses
// connections and its backends are ended); on SQLite, which has no server to
// lose, the finishing write is failed with a lost connection.
func TestFinishWrittenWholeOnceTheDatabaseIsBack(t *testing.T) {
	db := modelstest.Open(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	hold := mcptest.NewTool(&mcp.Tool{Name: "hold", Description: "waits to be released"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in holdIn) (*mcp.CallToolResult, any, error) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held: " + in.Message}}}, nil, nil
		})
	srv := mcptest.StartGoServer(t, benchToken, hold)
	rt, p, session := sessionOfServer(t, db, srv)

	type answer struct {
		v   runtime.ToolCallView
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		wait := 60.0
		v, err := rt.ToolCallCreate(context.Background(), p, runtime.ToolCallInput{Session: session, Tool: "mcp__srv__hold",
			Input: json.RawMessage(`{"message":"kept"}`), WaitSeconds: &wait})
		answered <- answer{v, err}
	}()
	select {
	case <-entered:
	case a := <-answered:
		t.Fatalf("the call ended before its tool ran: %v %+v", a.err, a.v)
	case <-time.After(30 * time.Second):
		t.Fatal("the tool was not reached")
	}
	var call models.ToolCall
	if err := db.Where("session_id = ? AND tool = ?", session, "mcp__srv__hold").First(&call).Error; err != nil {
		t.Fatalf("the opening record is not there while the tool runs: %v", err)
	}
	if call.Status != runtime.CallRunning {
		t.Fatalf("recorded %s while the tool runs, want running", call.Status)
	}
	// The database loses the opening record.
	if err := db.Exec("DELETE FROM tool_calls WHERE id = ?", call.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("DELETE FROM actions WHERE verb = ? AND targets LIKE ?", "ToolCall.create", "%"+call.ID+"%").Error; err != nil {
		t.Fatal(err)
	}
	back := goAway(t, db)
	close(release)
	select {
	case a := <-answered:
		t.Fatalf("the caller was answered while the database was away: %v %+v", a.err, a.v)
	case <-time.After(700 * time.Millisecond):
	}
	back()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer 30 s after the database came back")
	}
	if a.err != nil || a.v.Status != runtime.CallSucceeded || !strings.Contains(string(a.v.Output), "held: kept") {
		t.Fatalf("the caller got %v %+v, want the call succeeded with its output", a.err, a.v)
	}
	var got models.ToolCall
	if err := db.First(&got, "id = ?", call.ID).Error; err != nil {
		t.Fatalf("the call's record was not written again: %v", err)
	}
	if got.Status != runtime.CallSucceeded || !strings.Contains(got.Output, "held: kept") || got.FinishedAt == nil || got.SessionID != session {
		t.Fatalf("the call's record reads %s %q, want succeeded with its output", got.Status, got.Output)
	}
	var acts int64
	db.Model(&models.Action{}).Where("verb = ? AND targets LIKE ?", "ToolCall.create", "%"+call.ID+"%").Count(&acts)
	if acts != 1 {
		t.Fatalf("%d ToolCall.create Actions for the call, want 1", acts)
	}
}

// goAway makes the database unreachable for the runtime's writes until back
// is called.
func goAway(t *testing.T, db *models.DB) (back func()) {
	if db.Dialect != models.Postgres {
		var failing atomic.Bool
		failing.Store(true)
		fail := func(tx *gorm.DB) {
			if failing.Load() && tx.Statement.Table == "tool_calls" {
				_ = tx.AddError(driver.ErrBadConn)
			}
		}
		cb := db.Callback()
		if err := cb.Update().Before("gorm:update").Register("test:away", fail); err != nil {
			t.Fatal(err)
		}
		if err := cb.Create().Before("gorm:create").Register("test:away", fail); err != nil {
			t.Fatal(err)
		}
		return func() { failing.Store(false) }
	}
	var name string
	if err := db.Raw("SELECT current_database()").Scan(&name).Error; err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(os.Getenv(modelstest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := gorm.Open(postgres.Open(u.String()), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS true")
		if sqlDB, err := admin.DB(); err == nil {
			sqlDB.Close()
		}
	})
	if err := admin.Exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS false").Error; err != nil {
		t.Fatal(err)
	}
	if err := admin.Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ?", name).Error; err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := admin.Exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS true").Error; err != nil {
			t.Fatal(err)
		}
	}
}

// sessionOfServer is a session of a published version granting the MCP
// server at url as "srv" (allowed), with its bearer credential.
func sessionOfServer(t *testing.T, db *models.DB, url string) (*runtime.Runtime, runtime.Principal, string) {
	ctx := t.Context()
	rt := runtime.New(db, runtime.Options{AllowPrivateEgress: true})
	t.Cleanup(rt.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", "correct-horse-battery")
	must(err)
	owner, err := rt.PrincipalForEmail(ctx, "owner@example.com")
	must(err)
	v, err := rt.VaultCreate(ctx, owner, runtime.VaultInput{Name: "held"})
	must(err)
	_, err = rt.CredentialSet(ctx, owner, runtime.CredentialInput{Vault: v.ID, Prefix: url, Type: "bearer", Secret: benchToken})
	must(err)
	name := "held"
	a, err := rt.AgentCreate(ctx, owner, runtime.AgentInput{Name: &name})
	must(err)
	cfg, _ := json.Marshal(map[string]any{
		"mcp_servers": []any{map[string]any{"name": "srv", "url": url, "default_policy": "allow"}},
	})
	ver, err := rt.VersionCreate(ctx, owner, runtime.VersionCreateInput{Agent: a.ID, Config: cfg})
	must(err)
	_, err = rt.VersionPublish(ctx, owner, ver.ID)
	must(err)
	s, err := rt.SessionCreate(ctx, owner, runtime.SessionCreateInput{Version: ver.ID, Vaults: []string{v.ID}})
	must(err)
	return rt, runtime.SessionPrincipal(s.ID, ""), s.ID
}
