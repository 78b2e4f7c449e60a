package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
)

// A code-mode program's calls link to the program's Action: Action.list
// answers each call's parent_id and lists them by ?parent=, and the Audit
// page links the program's row to its calls and each call to its program.
func TestProgramCallsLinkToTheirProgram(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	ctx := context.Background()
	p, err := e.rt.AuthenticateToken(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	var program string
	err = e.rt.ProgramRun(ctx, p, runtime.ProgramInput{Program: "await $.Agent.create({name: 'a'})", Client: "MCP test/1"}, func(ctx context.Context, id string) error {
		program = id
		in := runtime.WithCaller(ctx, runtime.Caller{Client: "code mode", ParentAction: id})
		name := "made-by-program"
		if _, err := e.rt.AgentCreate(in, p, runtime.AgentInput{Name: &name}); err != nil {
			return err
		}
		_, err := e.rt.AgentList(in, p)
		return err
	})
	if err != nil || program == "" {
		t.Fatalf("ProgramRun: %v", err)
	}
	var calls []struct {
		Verb   string `json:"verb"`
		Parent string `json:"parent_id"`
		Client string `json:"client_info"`
	}
	if st := e.api(tok, "GET", "/actions?parent="+program, nil, &calls); st != 200 || len(calls) != 2 {
		t.Fatalf("Action.list?parent=%s: %d %+v (want the program's 2 calls)", program, st, calls)
	}
	for _, c := range calls {
		if c.Parent != program || c.Client != "code mode" {
			t.Errorf("a program's call: %+v", c)
		}
	}
	_, page := owner.get("/audit?reads=on") // Program.run reads nothing itself
	if !strings.Contains(page, `href="/audit?parent=`+program+`"`) || !strings.Contains(page, "its calls") || !strings.Contains(page, "in program") {
		t.Errorf("the Audit page links neither the program to its calls nor a call to its program:\n%s", page)
	}
	_, page = owner.get("/audit?parent=" + program)
	if n := strings.Count(page, `data-testid="action-row"`); n != 2 {
		t.Errorf("/audit?parent= shows %d rows, want the program's 2 calls", n)
	}
}
