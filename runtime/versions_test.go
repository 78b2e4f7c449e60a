package runtime_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// Grant saves made at the same time (two tabs, two editors) all land.
func TestConcurrentGrantSavesAreAllKept(t *testing.T) {
	ctx := t.Context()
	rt := runtime.New(modelstest.Open(t), runtime.Options{})
	t.Cleanup(rt.Close)
	if _, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ := rt.PrincipalForEmail(ctx, "owner@example.com")
	name := "agent"
	a, err := rt.AgentCreate(ctx, owner, runtime.AgentInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	v, err := rt.VersionCreate(ctx, owner, runtime.VersionCreateInput{Agent: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := fmt.Sprintf(`{"name":"box-%d","environment":{"type":"platform","release":"2026"},"network":{"type":"none"},"default_policy":"allow"}`, i)
			if _, err := rt.VersionSetGrant(ctx, owner, v.ID, "sandbox", "", json.RawMessage(g)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a concurrent save failed: %v", err)
	}
	got, err := rt.VersionGet(ctx, owner, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if boxes := got.Parsed().Sandboxes; len(boxes) != n {
		t.Fatalf("%d of %d concurrent grant saves were kept: %+v", len(boxes), n, boxes)
	}
}

// Saving a grant that someone removed meanwhile does not bring it back.
func TestEditOfARemovedGrantIsRefused(t *testing.T) {
	ctx := t.Context()
	rt := runtime.New(modelstest.Open(t), runtime.Options{})
	t.Cleanup(rt.Close)
	if _, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ := rt.PrincipalForEmail(ctx, "owner@example.com")
	name := "agent"
	a, _ := rt.AgentCreate(ctx, owner, runtime.AgentInput{Name: &name})
	v, err := rt.VersionCreate(ctx, owner, runtime.VersionCreateInput{Agent: a.ID, Config: json.RawMessage(`{"builtins":[{"name":"session"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.VersionRemoveGrant(ctx, owner, v.ID, "builtin", "session"); err != nil {
		t.Fatal(err)
	}
	_, err = rt.VersionSetGrant(ctx, owner, v.ID, "builtin", "session", json.RawMessage(`{"name":"session"}`))
	if e, ok := runtime.AsError(err); !ok || e.Code != "grant_gone" {
		t.Fatalf("editing a removed grant: %v", err)
	}
	got, _ := rt.VersionGet(ctx, owner, v.ID)
	if len(got.Parsed().Builtins) != 0 {
		t.Fatalf("the removed grant came back: %+v", got.Parsed())
	}
}
