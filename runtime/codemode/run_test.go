package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/codemode"
)

// approvals is a tiny $ backend: Approval.list answers two, Approval.approve
// echoes, Agent.create is refused as the API refuses a viewer.
func approvals(ctx context.Context, name string, input json.RawMessage) (codemode.Answer, error) {
	switch name {
	case "Approval.list":
		return codemode.JSON(json.RawMessage(`{"items":[{"id":"ap_1"},{"id":"ap_2"}]}`)), nil
	case "Approval.approve":
		return codemode.JSON(input), nil
	case "Agent.create":
		return codemode.Answer{}, &codemode.CallError{Code: "permission_denied", Status: 403, MissingPermission: "Agent.create",
			Message: "permission denied: Agent.create * is not granted"}
	}
	return codemode.Answer{}, errors.New("no such verb")
}

var names = []string{"Approval.list", "Approval.approve", "Agent.create", "sandbox.workbench.exec"}

func runErr(t *testing.T, res codemode.Result, err error, code string) *codemode.Error {
	t.Helper()
	var e *codemode.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a codemode.Error %s, got %v (value %s)", code, err, res.Value)
	}
	if e.Code != code {
		t.Fatalf("want code %s, got %s: %s", code, e.Code, e.Message)
	}
	return e
}

func TestRunReturnsValueAndLog(t *testing.T) {
	src := `
type Item = { id: string }
const list: { items: Item[] } = await $.Approval.list({ state: "waiting" })
console.log("found", list.items.length)
const done: string[] = []
for (const it of list.items) {
  const r = await $.Approval.approve({ approval: it.id })
  done.push(r.approval)
}
console.log({ done })
return { approved: done, ok: typeof $.sandbox.workbench.exec === "function" }`
	res, err := codemode.Run(context.Background(), src, names, approvals, codemode.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"approved":["ap_1","ap_2"],"ok":true}` {
		t.Fatalf("value %s", res.Value)
	}
	if strings.Join(res.Log, "|") != `found 2|{"done":["ap_1","ap_2"]}` || res.Calls != 3 {
		t.Fatalf("log %q calls %d", res.Log, res.Calls)
	}
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, src, code, says string
		lim                   codemode.Limits
	}{
		{"syntax", "const x: number = ;\nreturn x", codemode.CodeSyntax, "line 1", codemode.Limits{}},
		{"unclosed", "return ((", codemode.CodeSyntax, "at the end of the program", codemode.Limits{}},
		{"uncaught throw", "throw new Error('boom')", codemode.CodeProgram, "boom", codemode.Limits{}},
		{"infinite loop", "while (true) {}", codemode.CodeDeadline, "deadline of 300ms", codemode.Limits{Deadline: 300 * time.Millisecond}},
		{"allocation bomb", "const a: string[] = []; while (true) a.push('x'.repeat(1000) + a.length)", codemode.CodeMemory, "memory limit of 33554432 bytes (32 MiB)", codemode.Limits{MemoryBytes: 32 << 20}},
		{"call-count bomb", "while (true) { try { await $.Approval.list() } catch (e) {} }", codemode.CodeCalls, "limit is 5", codemode.Limits{MaxCalls: 5}},
		{"huge result", "return 'x'.repeat(2000)", codemode.CodeResultTooLarge, "limit is 1024 bytes (1 KiB)", codemode.Limits{MaxResultBytes: 1024}},
		{"program too large", "return 1" + strings.Repeat(" ", 2000), codemode.CodeProgramTooLong, "limit is 1024 bytes", codemode.Limits{MaxProgramBytes: 1024}},
		{"never settles", "await new Promise(() => {})", codemode.CodeProgram, "never settles", codemode.Limits{}},
		{"no host access", "return typeof require + typeof process + typeof setTimeout + typeof fetch", "", "", codemode.Limits{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			res, err := codemode.Run(ctx, c.src, names, approvals, c.lim)
			if c.code == "" {
				if err != nil || string(res.Value) != `"undefinedundefinedundefinedundefined"` {
					t.Fatalf("value %s, err %v", res.Value, err)
				}
				return
			}
			e := runErr(t, res, err, c.code)
			if !strings.Contains(e.Message, c.says) {
				t.Fatalf("message %q does not say %q", e.Message, c.says)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("took %s", time.Since(start))
			}
		})
	}
}

func TestThrownCallErrorIsVisibleToTheProgram(t *testing.T) {
	src := `try {
  await $.Agent.create({ name: "x" })
  return "created"
} catch (e: any) {
  return { code: e.code, missing: e.missing_permission, status: e.status, message: e.message, isError: e instanceof Error }
}`
	res, err := codemode.Run(context.Background(), src, names, approvals, codemode.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Code, Missing, Message string
		Status                 int
		IsError                bool
	}
	if err := json.Unmarshal(res.Value, &got); err != nil {
		t.Fatal(err)
	}
	if got.Code != "permission_denied" || got.Missing != "Agent.create" || got.Status != 403 || !got.IsError ||
		!strings.Contains(got.Message, "Agent.create") {
		t.Fatalf("%s", res.Value)
	}
	// Uncaught, the run's error names the verb's missing permission.
	_, err = codemode.Run(context.Background(), `await $.Agent.create({})`, names, approvals, codemode.Limits{})
	var e *codemode.Error
	if !errors.As(err, &e) || e.Code != codemode.CodeProgram || !strings.Contains(e.Message, "missing permission Agent.create") {
		t.Fatalf("%v", err)
	}
}

func TestLogIsBounded(t *testing.T) {
	res, err := codemode.Run(context.Background(), `for (let i = 0; i < 10000; i++) console.log("line", i); return 1`, nil, approvals, codemode.Limits{MaxLogBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	last := res.Log[len(res.Log)-1]
	if !strings.Contains(last, "limited to 1000 bytes") || len(res.Log) > 200 {
		t.Fatalf("%d lines, last %q", len(res.Log), last)
	}
}

// A call waiting for a person (an ask-first tool) stops the program's clock:
// with CallWait, a program whose call waits past its deadline still finishes,
// while its own time is still held to the deadline, and the calls' wait is
// bounded too.
func TestCallWaitStopsTheProgramsClock(t *testing.T) {
	slow := func(wait time.Duration) codemode.Call {
		return func(ctx context.Context, name string, input json.RawMessage) (codemode.Answer, error) {
			select {
			case <-time.After(wait):
				return codemode.JSON(json.RawMessage(`"approved"`)), nil
			case <-ctx.Done():
				return codemode.Answer{}, ctx.Err()
			}
		}
	}
	lim := codemode.Limits{Deadline: 300 * time.Millisecond, CallWait: 5 * time.Second}

	res, err := codemode.Run(context.Background(), `return await $.sandbox.workbench.exec({})`, names, slow(time.Second), lim)
	if err != nil || string(res.Value) != `"approved"` {
		t.Fatalf("a call waiting 1 s in a 300 ms program with 5 s of call wait: %s, %v", res.Value, err)
	}

	res, err = codemode.Run(context.Background(), `await $.sandbox.workbench.exec({}); while (true) {}`, names, slow(500*time.Millisecond), lim)
	if e := runErr(t, res, err, codemode.CodeDeadline); !strings.Contains(e.Message, "300ms") {
		t.Fatalf("the program's own time is still bounded: %s", e.Message)
	}

	short := codemode.Limits{Deadline: 300 * time.Millisecond, CallWait: 500 * time.Millisecond}
	res, err = codemode.Run(context.Background(), `return await $.sandbox.workbench.exec({})`, names, slow(time.Minute), short)
	if e := runErr(t, res, err, codemode.CodeDeadline); !strings.Contains(e.Message, "calls' wait of 500ms") {
		t.Fatalf("the calls' wait is bounded: %s", e.Message)
	}

	// Without CallWait a call's time counts, as before.
	res, err = codemode.Run(context.Background(), `return await $.sandbox.workbench.exec({})`, names, slow(time.Second), codemode.Limits{Deadline: 300 * time.Millisecond})
	runErr(t, res, err, codemode.CodeDeadline)
}
