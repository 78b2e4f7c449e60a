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

// Every call a session's token makes records the agent version the session
// runs, the reads too, and the client it came from.
func TestSessionTokenCallsRecordTheirVersion(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	_, draft := e.agentWithDraft(tok)
	if st := e.api(tok, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	var s session
	if st := e.api(tok, "POST", "/sessions", map[string]any{"version": draft.ID}, &s); st != 201 && st != 200 {
		t.Fatalf("Session.create: %d", st)
	}
	for _, path := range []string{"/sessions/" + s.ID, "/sessions/" + s.ID + "/tools", "/sessions/" + s.ID + "/tool_calls"} {
		if st := e.api(s.Token, "GET", path, nil, nil); st != 200 {
			t.Fatalf("GET %s with the session's token: %d", path, st)
		}
	}
	var acts []struct {
		Verb    string `json:"verb"`
		ByKind  string `json:"by_kind"`
		Version string `json:"version"`
		Client  string `json:"client_info"`
	}
	if st := e.api(tok, "GET", "/actions?limit=500", nil, &acts); st != 200 {
		t.Fatalf("Action.list: %d", st)
	}
	seen := 0
	for _, a := range acts {
		if a.ByKind != "session" {
			continue
		}
		seen++
		if a.Version != draft.ID || !strings.HasPrefix(a.Client, "API (") {
			t.Errorf("%s by the session's token recorded version %q client %q, want %s and API (…)", a.Verb, a.Version, a.Client, draft.ID)
		}
	}
	if seen < 3 {
		t.Errorf("%d Actions by the session's token, want its 3 calls", seen)
	}
}
