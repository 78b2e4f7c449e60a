package runtime

import (
	"testing"

	"github.com/subako/subako/models"
)

// A call the verb itself refuses (bad input: 422) did nothing, so it takes no
// unit of a count limit: before, a mistyped name used the day's one
// Agent.create, and the corrected call was refused with limit_reached.
func TestRefusedCallTakesNoUnitOfItsLimit(t *testing.T) {
	w := newLimitWorld(t, 1)
	ctx, rt := t.Context(), w.rts[0]
	p := w.person(t, "once@example.com", models.Permission{Verb: "Agent.create", LimitCount: 1, LimitPeriod: "day"})
	bad := ""
	_, err := rt.AgentCreate(ctx, p, AgentInput{Name: &bad})
	if e, _ := AsError(err); e == nil || e.Kind != KindInvalid {
		t.Fatalf("a bad name: want 422, got %v", err)
	}
	good := "right-name"
	if _, err := rt.AgentCreate(ctx, p, AgentInput{Name: &good}); err != nil {
		t.Fatalf("the corrected call, the day's first that did anything: %v", err)
	}
	again := "second"
	if _, err := rt.AgentCreate(ctx, p, AgentInput{Name: &again}); err == nil {
		t.Fatal("a second Agent.create over 1 a day was allowed")
	}
}
