package runtime

import (
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSkillReadsConcurrent: skill reads through ToolCall.create in
// process, each a write of the call and its Action, from 1 and 8 callers at
// once. Reports calls a second and the process's CPU time a call (user and
// system), the figure that decides throughput on a loaded machine.
func BenchmarkSkillReadsConcurrent(b *testing.B) {
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			db := modelstest.Open(b)
			r, _, s := skillSessionB(b, db)
			sp := SessionPrincipal(s.ID, "")
			wait := 10.0
			in := json.RawMessage(`{"path":"refunds.md"}`)
			read := func() {
				c, err := r.ToolCallCreate(b.Context(), sp, ToolCallInput{Session: s.ID, Tool: "skill__policy__read", Input: in, WaitSeconds: &wait})
				if err != nil || c.Status != CallSucceeded {
					b.Errorf("%v %+v", err, c)
				}
			}
			read()
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			var wg sync.WaitGroup
			per := b.N
			for range clients {
				wg.Go(func() {
					for range per {
						read()
					}
				})
			}
			wg.Wait()
			n := float64(per * clients)
			b.ReportMetric(n/time.Since(start).Seconds(), "calls/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/n, "cpu-us/call")
		})
	}
}

func skillSessionB(t testing.TB, db *models.DB) (*Runtime, Principal, SessionView) {
	t.Helper()
	ctx := t.Context()
	r := New(db, Options{})
	t.Cleanup(r.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := r.UserCreate(ctx, System, "owner@example.com", "owner", "correct-horse-battery")
	must(err)
	owner, err := r.PrincipalForEmail(ctx, "owner@example.com")
	must(err)
	_, err = r.SkillCreate(ctx, owner, SkillInput{Name: "policy", Files: []SkillFileInput{{Path: "refunds.md", Content: "Refunds within 30 days."}}})
	must(err)
	name := "reviewed"
	a, err := r.AgentCreate(ctx, owner, AgentInput{Name: &name})
	must(err)
	cfg, _ := json.Marshal(map[string]any{"skills": []any{map[string]any{"name": "policy", "skill": "policy"}}})
	ver, err := r.VersionCreate(ctx, owner, VersionCreateInput{Agent: a.ID, Config: cfg})
	must(err)
	_, err = r.VersionPublish(ctx, owner, ver.ID)
	must(err)
	s, err := r.SessionCreate(ctx, owner, SessionCreateInput{Version: ver.ID})
	must(err)
	return r, owner, s
}
